#include "local_stats.h"

#include <ATen/ATen.h>

namespace autoreg::segmentation::detail {

at::Tensor box_mean(const at::Tensor& x, int r) {
  if (r == 0) return x;
  const int64_t k = 2 * int64_t(r) + 1;
  at::Tensor v = x.unsqueeze(0).unsqueeze(0);
  // count_include_pad = false: at the border the mean is over the voxels inside.
  v = at::avg_pool3d(v, {k, 1, 1}, {1, 1, 1}, {r, 0, 0}, false, false);
  v = at::avg_pool3d(v, {1, k, 1}, {1, 1, 1}, {0, r, 0}, false, false);
  v = at::avg_pool3d(v, {1, 1, k}, {1, 1, 1}, {0, 0, r}, false, false);
  return v.squeeze(0).squeeze(0);
}

at::Tensor local_zscore(const at::Tensor& x_in, int r, double center, double eps) {
  if (r == 0) return x_in;
  const at::Tensor x = x_in - center;
  const at::Tensor mean = box_mean(x, r);
  const at::Tensor var = (box_mean(x * x, r) - mean * mean).clamp_min_(0);
  return (x - mean) / (var + eps * eps + 1e-20).sqrt_();
}

}  // namespace autoreg::segmentation::detail
