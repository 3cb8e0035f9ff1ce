#include "box_filter.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <vector>

namespace autoreg::registration::detail {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One 1-D pass along axis `axis` (0: D, 1: H, 2: W) of every N×C volume, window 2p + 1
// clipped at the borders. Mean: out_i = Σ_{|j−i|≤p} in_j / n_i. Adjoint (the mean's
// transpose, for the backward pass): out_j = Σ_{|i−j|≤p} in_i / n_i.
void box_pass(const float* in, float* out, int64_t volumes, int64_t d, int64_t h, int64_t w, int axis, int64_t p,
              bool adjoint) {
  const int64_t len = axis == 0 ? d : axis == 1 ? h : w;
  const int64_t stride = axis == 0 ? h * w : axis == 1 ? w : 1;
  // Lines along the axis: each is (volume, other two indices). Rows of the inner axes
  // are processed together (contiguous) for D and H; W lines one at a time.
  const int64_t width = axis == 2 ? 1 : (axis == 1 ? w : h * w);  // contiguous run per line start
  const int64_t outer = axis == 0 ? volumes : axis == 1 ? volumes * d : volumes * d * h;
  const auto count = [&](int64_t i) { return double(std::min(len - 1, i + p) - std::max<int64_t>(0, i - p) + 1); };
  std::vector<double> inv(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) inv[size_t(i)] = 1.0 / count(i);
  // Work items: a line bundle and a chunk of its contiguous run (so that the D pass of
  // one volume still spreads over the threads).
  constexpr int64_t kChunk = 2048;
  const int64_t chunks = (width + kChunk - 1) / kChunk;
  at::parallel_for(0, outer * chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> sum(size_t(std::min(width, kChunk)));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item / chunks, x0 = (item % chunks) * kChunk, xn = std::min(kChunk, width - x0);
      // The first element of this line bundle's chunk.
      const int64_t base = (axis == 2 ? o * w : axis == 1 ? o * h * w : o * d * h * w) + x0;
      const float* src = in + base;
      float* dst = out + base;
      const auto value = [&](int64_t i, int64_t x) {  // the input as summed (÷ n for the adjoint)
        const double v = src[i * stride + x];
        return adjoint ? v * inv[size_t(i)] : v;
      };
      std::fill(sum.begin(), sum.begin() + xn, 0.0);
      for (int64_t i = 0; i < std::min(p, len); ++i)
        for (int64_t x = 0; x < xn; ++x) sum[size_t(x)] += value(i, x);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t enter = i + p, leave = i - p - 1;
        if (enter < len)
          for (int64_t x = 0; x < xn; ++x) sum[size_t(x)] += value(enter, x);
        if (leave >= 0)
          for (int64_t x = 0; x < xn; ++x) sum[size_t(x)] -= value(leave, x);
        const double scale = adjoint ? 1.0 : inv[size_t(i)];
        for (int64_t x = 0; x < xn; ++x) dst[i * stride + x] = float(sum[size_t(x)] * scale);
      }
    }
  });
}

at::Tensor box3(const at::Tensor& t, int64_t window, bool adjoint) {
  const at::Tensor x = t.contiguous();
  const int64_t volumes = x.size(0) * x.size(1), d = x.size(2), h = x.size(3), w = x.size(4), p = window / 2;
  at::Tensor a = at::empty_like(x), b = at::empty_like(x);
  // Mean: D, H, W in turn; its adjoint: the transposes in reverse order.
  const int order[3] = {0, 1, 2};
  const float* src = x.data_ptr<float>();
  for (int s = 0; s < 3; ++s) {
    const int axis = adjoint ? order[2 - s] : order[s];
    at::Tensor& dst = s % 2 == 0 ? a : b;
    box_pass(src, dst.data_ptr<float>(), volumes, d, h, w, axis, p, adjoint);
    src = dst.data_ptr<float>();
  }
  return a;  // the third pass wrote into `a`
}

class BoxMean : public torch::autograd::Function<BoxMean> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& t, int64_t window) {
    ctx->saved_data["window"] = window;
    return box3(t, window, false);
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grad) {
    return {box3(grad[0], ctx->saved_data["window"].toInt(), true), at::Tensor()};
  }
};

}  // namespace

at::Tensor fast_box_mean(const at::Tensor& t, int64_t window) {
  TORCH_CHECK(t.dim() == 5 && t.device().is_cpu() && t.scalar_type() == at::kFloat && window % 2 == 1,
              "fast_box_mean: a float32 CPU tensor N×C×D×H×W and an odd window");
  return BoxMean::apply(t, window);
}

}  // namespace autoreg::registration::detail
