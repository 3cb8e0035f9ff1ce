#include "mutual_information.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace autoreg::registration::detail {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
constexpr int64_t kBins = kMutualInformationBins;
constexpr double kSigma = 1.0 / double(kBins);
constexpr double kCut = 8.0;  // in σ

// Parzen weights of the values v[0..n) into w (n×kBins), and with `slope` each value's
// d(log g_b)/dv = −(v − c_b)/σ² averaged over its weights (d̄ of the backward pass).
void parzen(const float* v, int64_t n, float* w, float* mean_slope) {
  at::parallel_for(0, n, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double x = std::clamp(double(v[i]), 0.0, 1.0);
      std::array<double, kBins> g{};
      double sum = 0;
      for (int64_t b = 0; b < kBins; ++b) {
        // Cut at 8σ (e^-32): beyond it the weights would be float denormals, which made
        // the histogram's matrix products slow (a step of the T1/T2 pair's affine: 19 ms
        // with them, 5.5 ms without).
        const double d = (x - (double(b) + 0.5) / double(kBins)) / kSigma;
        sum += g[size_t(b)] = std::abs(d) <= kCut ? std::exp(-0.5 * d * d) : 0.0;
      }
      const double inv = 1.0 / (sum + 1e-12);
      double slope = 0;
      for (int64_t b = 0; b < kBins; ++b) {
        const double wb = g[size_t(b)] * inv;
        w[i * kBins + b] = float(wb);
        slope += wb * -(x - (double(b) + 0.5) / double(kBins)) / (kSigma * kSigma);
      }
      if (mean_slope) mean_slope[i] = float(slope);
    }
  });
}

class MutualInformation : public torch::autograd::Function<MutualInformation> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& fixed_weights, const at::Tensor& moving) {
    const at::Tensor m = moving.contiguous();
    const int64_t n = m.numel();
    at::Tensor wm = at::empty({n, kBins}, m.options());
    at::Tensor slope = at::empty({n}, m.options());
    parzen(m.data_ptr<float>(), n, wm.data_ptr<float>(), slope.data_ptr<float>());
    const at::Tensor joint = fixed_weights.t().matmul(wm).to(at::kDouble);  // B×B, unnormalised
    const double z = joint.sum().item<double>() + 1e-12;
    const at::Tensor p = joint / z;
    const at::Tensor pf = p.sum(1, true), pm = p.sum(0, true);
    // log(P / (pf pm)), ε as before: empty bins add nothing.
    const at::Tensor log_ratio = at::log(p + 1e-12) - at::log(pf.matmul(pm) + 1e-12);
    const double mi = (p * log_ratio).sum().item<double>();
    // dMI/dJ_ab = (log P_ab − log pf_a − log pm_b − MI) / Z.
    ctx->save_for_backward({fixed_weights, m, wm, slope, ((log_ratio - mi) / z).to(at::kFloat)});
    return at::scalar_tensor(mi, m.options());
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &fixed_weights = saved[0], &m = saved[1], &wm = saved[2], &slope = saved[3], &d_joint = saved[4];
    // dMI/dwm_ib = Σ_a wf_ia dMI/dJ_ab, then dwm_ib/dm_i = wm_ib (s_ib − s̄_i) with
    // s_ib = −(m_i − c_b)/σ²: the Gaussian's log-slope and its weighted mean.
    const at::Tensor h = fixed_weights.matmul(d_joint).contiguous();  // n×B
    const int64_t n = m.numel();
    at::Tensor out = at::empty({n}, m.options());
    const float *mp = m.data_ptr<float>(), *wp = wm.data_ptr<float>(), *hp = h.data_ptr<float>(), *sp = slope.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const double g = grad[0].item<double>();
    at::parallel_for(0, n, 1024, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const double x = double(mp[i]);
        if (x < 0 || x > 1) {  // clamped: no gradient
          op[i] = 0;
          continue;
        }
        double sum = 0;
        for (int64_t b = 0; b < kBins; ++b) {
          const double s = -(x - (double(b) + 0.5) / double(kBins)) / (kSigma * kSigma);
          sum += double(hp[i * kBins + b]) * double(wp[i * kBins + b]) * (s - double(sp[i]));
        }
        op[i] = float(g * sum);
      }
    });
    return {at::Tensor(), out.view(ctx->get_saved_variables()[1].sizes())};
  }
};

}  // namespace

at::Tensor parzen_weights(const at::Tensor& v) {
  const at::Tensor c = v.detach().to(at::kFloat).cpu().contiguous();
  at::Tensor w = at::empty({c.numel(), kBins}, c.options());
  parzen(c.data_ptr<float>(), c.numel(), w.data_ptr<float>(), nullptr);
  return w;
}

at::Tensor mutual_information(const at::Tensor& fixed_weights, const at::Tensor& moving) {
  TORCH_CHECK(fixed_weights.dim() == 2 && fixed_weights.size(1) == kBins && moving.numel() == fixed_weights.size(0) &&
                  moving.device().is_cpu() && moving.scalar_type() == at::kFloat,
              "mutual_information: n×32 fixed weights and n float32 CPU moving values");
  return MutualInformation::apply(fixed_weights.to(at::kFloat).contiguous(), moving.reshape({-1}));
}

}  // namespace autoreg::registration::detail
