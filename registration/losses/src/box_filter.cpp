#include "box_filter.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace autoreg::registration::detail {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One 1-D pass along axis `axis` (0: D, 1: H, 2: W) of every N×C volume, window 2p + 1
// clipped at the borders. Mean: out_i = Σ_{|j−i|≤p} in_j / n_i. Adjoint (the mean's
// transpose, for the backward pass): out_j = Σ_{|i−j|≤p} in_i / n_i.
// Along W (contiguous lines): a prefix sum of the line, then one difference per voxel.
void box_pass_w(const float* in, float* out, int64_t lines, int64_t len, int64_t p, const double* inv,
                bool adjoint) {
  at::parallel_for(0, lines, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, len)), [&](int64_t begin, int64_t end) {
    std::vector<double> prefix(size_t(len + 1));
    for (int64_t l = begin; l < end; ++l) {
      const float* src = in + l * len;
      float* dst = out + l * len;
      double s = 0;
      prefix[0] = 0;
      if (adjoint) {
        for (int64_t i = 0; i < len; ++i) prefix[size_t(i + 1)] = s += double(src[i]) * inv[i];
        for (int64_t i = 0; i < len; ++i) {
          dst[i] = float(prefix[size_t(std::min(len, i + p + 1))] - prefix[size_t(std::max<int64_t>(0, i - p))]);
        }
      } else {
        for (int64_t i = 0; i < len; ++i) prefix[size_t(i + 1)] = s += double(src[i]);
        for (int64_t i = 0; i < len; ++i) {
          dst[i] = float((prefix[size_t(std::min(len, i + p + 1))] - prefix[size_t(std::max<int64_t>(0, i - p))]) * inv[i]);
        }
      }
    }
  });
}

// One 1-D pass along axis `axis` (0: D, 1: H, 2: W) of every N×C volume, window 2p + 1
// clipped at the borders. Mean: out_i = Σ_{|j−i|≤p} in_j / n_i. Adjoint (the mean's
// transpose, for the backward pass): out_j = Σ_{|i−j|≤p} in_i / n_i.
void box_pass(const float* in, float* out, int64_t volumes, int64_t d, int64_t h, int64_t w, int axis, int64_t p,
              bool adjoint) {
  const int64_t len = axis == 0 ? d : axis == 1 ? h : w;
  const int64_t stride = axis == 0 ? h * w : axis == 1 ? w : 1;
  const auto count = [&](int64_t i) { return double(std::min(len - 1, i + p) - std::max<int64_t>(0, i - p) + 1); };
  std::vector<double> inv(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) inv[size_t(i)] = 1.0 / count(i);
  if (axis == 2) return box_pass_w(in, out, volumes * d * h, w, p, inv.data(), adjoint);
  // Lines along D or H: the rows of the inner axes are processed together (contiguous).
  const int64_t width = axis == 1 ? w : h * w;  // contiguous run per line start
  const int64_t outer = axis == 0 ? volumes : volumes * d;
  // Work items: a line bundle and a chunk of its contiguous run (so that the D pass of
  // one volume still spreads over the threads).
  constexpr int64_t kChunk = 2048;
  const int64_t chunks = (width + kChunk - 1) / kChunk;
  // The adjoint flag as a compile-time constant, so that the inner loops vectorise.
  const auto run = [&](auto adjoint_constant) {
    constexpr bool kAdjoint = decltype(adjoint_constant)::value;
    at::parallel_for(0, outer * chunks, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> sum(size_t(std::min(width, kChunk)));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / chunks, x0 = (item % chunks) * kChunk, xn = std::min(kChunk, width - x0);
        // The first element of this line bundle's chunk.
        const int64_t base = (axis == 1 ? o * h * w : o * d * h * w) + x0;
        const float* src = in + base;
        float* dst = out + base;
        double* acc = sum.data();
        const auto add = [&](int64_t i, double sign) {  // the input as summed (÷ n for the adjoint)
          const float* line = src + i * stride;
          const double k = kAdjoint ? sign * inv[size_t(i)] : sign;
          for (int64_t x = 0; x < xn; ++x) acc[x] += k * double(line[x]);
        };
        std::fill(acc, acc + xn, 0.0);
        for (int64_t i = 0; i < std::min(p, len); ++i) add(i, 1.0);
        for (int64_t i = 0; i < len; ++i) {
          if (i + p < len) add(i + p, 1.0);
          if (i - p - 1 >= 0) add(i - p - 1, -1.0);
          const double scale = kAdjoint ? 1.0 : inv[size_t(i)];
          float* line = dst + i * stride;
          for (int64_t x = 0; x < xn; ++x) line[x] = float(acc[x] * scale);
        }
      }
    });
  };
  if (adjoint) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
}

at::Tensor box3(const at::Tensor& t, const Window& window, bool adjoint) {
  const at::Tensor x = t.contiguous();
  const int64_t volumes = x.size(0) * x.size(1), d = x.size(2), h = x.size(3), w = x.size(4);
  at::Tensor a = at::empty_like(x), b = at::empty_like(x);
  // Mean: D, H, W in turn; its adjoint: the transposes in reverse order.
  const int order[3] = {0, 1, 2};
  const float* src = x.data_ptr<float>();
  for (int s = 0; s < 3; ++s) {
    const int axis = adjoint ? order[2 - s] : order[s];
    at::Tensor& dst = s % 2 == 0 ? a : b;
    box_pass(src, dst.data_ptr<float>(), volumes, d, h, w, axis, window[size_t(axis)] / 2, adjoint);
    src = dst.data_ptr<float>();
  }
  return a;  // the third pass wrote into `a`
}

class BoxMean : public torch::autograd::Function<BoxMean> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& t, const Window& window) {
    ctx->saved_data["window"] = std::vector<int64_t>(window.begin(), window.end());
    return box3(t, window, false);
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grad) {
    const std::vector<int64_t> w = ctx->saved_data["window"].toIntVector();
    return {box3(grad[0], Window{w[0], w[1], w[2]}, true), at::Tensor()};
  }
};

}  // namespace

at::Tensor fast_box_mean(const at::Tensor& t, const Window& window) {
  TORCH_CHECK(t.dim() == 5 && t.device().is_cpu() && t.scalar_type() == at::kFloat &&
                  window[0] % 2 == 1 && window[1] % 2 == 1 && window[2] % 2 == 1,
              "fast_box_mean: a float32 CPU tensor N×C×D×H×W and an odd window along each axis");
  return BoxMean::apply(t, window);
}

at::Tensor fast_box_mean(const at::Tensor& t, int64_t window) { return fast_box_mean(t, Window{window, window, window}); }

}  // namespace autoreg::registration::detail
