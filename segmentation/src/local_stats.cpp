#include "local_stats.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace autoreg::segmentation::detail {
namespace {

// The window of output index i along an axis of n: [max(0, i − r), min(n − 1, i + r)].
inline float inverse_count(int64_t i, int64_t n, int r) {
  return 1.0f / float(std::min<int64_t>(n - 1, i + r) - std::max<int64_t>(0, i - r) + 1);
}

// Running window means along W, in place: `lines` contiguous lines of `n` elements.
void mean_along_w(float* x, int64_t lines, int64_t n, int r) {
  at::parallel_for(0, lines, 64, [&](int64_t l0, int64_t l1) {
    std::vector<float> line(static_cast<size_t>(n));
    for (int64_t l = l0; l < l1; ++l) {
      float* p = x + l * n;
      std::copy(p, p + n, line.begin());
      double sum = 0;
      for (int64_t k = 0; k < std::min<int64_t>(n, r); ++k) sum += line[k];
      for (int64_t i = 0; i < n; ++i) {
        if (i + r < n) sum += line[i + r];
        if (i - r - 1 >= 0) sum -= line[i - r - 1];
        p[i] = float(sum) * inverse_count(i, n, r);
      }
    }
  });
}

// Along an axis whose elements are `stride` apart, for `outer` blocks of n·stride
// elements: rows of `stride` contiguous floats are added and subtracted as a whole.
void mean_along_rows(float* x, int64_t outer, int64_t n, int64_t stride, int r) {
  const int64_t chunk = 1024;  // columns per task
  const int64_t chunks = (stride + chunk - 1) / chunk;
  at::parallel_for(0, outer * chunks, 1, [&](int64_t t0, int64_t t1) {
    // Double sums: running sums in float drift by the values added and taken away, which
    // local variances (E[x²] − E[x]², small differences of large means) do not survive.
    std::vector<double> sum(static_cast<size_t>(chunk));
    std::vector<float> in(static_cast<size_t>(n * chunk));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, c0 = (t % chunks) * chunk, width = std::min(chunk, stride - c0);
      float* base = x + o * n * stride + c0;
      for (int64_t k = 0; k < n; ++k) std::copy(base + k * stride, base + k * stride + width, in.begin() + k * width);
      std::fill(sum.begin(), sum.begin() + width, 0.0);
      for (int64_t k = 0; k < std::min<int64_t>(n, r); ++k) {
        for (int64_t c = 0; c < width; ++c) sum[c] += in[k * width + c];
      }
      for (int64_t i = 0; i < n; ++i) {
        if (i + r < n) {
          const float* add = &in[(i + r) * width];
          for (int64_t c = 0; c < width; ++c) sum[c] += add[c];
        }
        if (i - r - 1 >= 0) {
          const float* sub = &in[(i - r - 1) * width];
          for (int64_t c = 0; c < width; ++c) sum[c] -= sub[c];
        }
        const float inv = inverse_count(i, n, r);
        float* out = base + i * stride;
        for (int64_t c = 0; c < width; ++c) out[c] = float(sum[c]) * inv;
      }
    }
  });
}

}  // namespace

at::Tensor box_mean(const at::Tensor& x_in, int r) {
  if (r == 0) return x_in;
  // Three separable passes of running sums (a box of a product of ranges: the mean over
  // the voxels inside the volume is the product of the per-axis means).
  at::Tensor x = x_in.to(at::kFloat).contiguous().clone();
  const int64_t d = x.size(0), h = x.size(1), w = x.size(2);
  float* p = x.data_ptr<float>();
  mean_along_w(p, d * h, w, r);
  mean_along_rows(p, d, h, w, r);      // along H: rows of W, blocks of H·W per plane
  mean_along_rows(p, 1, d, h * w, r);  // along D: planes of H·W
  return x;
}

at::Tensor local_zscore(const at::Tensor& x_in, int r, double center, double eps) {
  if (r == 0) return x_in;
  const at::Tensor x = x_in - center;
  const at::Tensor mean = box_mean(x, r);
  const at::Tensor var = (box_mean(x * x, r) - mean * mean).clamp_min_(0);
  return (x - mean) / (var + eps * eps + 1e-20).sqrt_();
}

}  // namespace autoreg::segmentation::detail
