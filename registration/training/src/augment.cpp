#include "autoreg/registration/augment.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace autoreg::registration {

at::Tensor random_smooth_field(at::IntArrayRef size, double sigma_voxels, int64_t control_points) {
  const at::Tensor coarse = at::randn({1, 3, control_points, control_points, control_points});
  return at::upsample_trilinear3d(coarse, size, /*align_corners=*/true) * sigma_voxels;
}

at::Tensor augment_intensity(const at::Tensor& image) {
  const auto opts = image.options();
  const double gamma = std::exp(0.25 * at::randn({1}).item<double>());
  const double gain = 0.9 + 0.2 * at::rand({1}).item<double>();
  const at::Tensor bias = at::exp(at::upsample_trilinear3d(at::randn({1, 1, 4, 4, 4}, opts) * 0.1,
                                                           image.sizes().slice(2), true));
  at::Tensor out = image.clamp(0, 1).pow(gamma) * gain * bias;
  out = out + at::randn_like(out) * 0.01;
  return out.clamp(0, 1);
}

at::Tensor label_intensity_table(const std::vector<at::Tensor>& images,
                                 const std::vector<at::Tensor>& labels) {
  TORCH_CHECK(images.size() == labels.size(), "label_intensity_table: one label map per image");
  int64_t top = 0;
  for (const auto& l : labels) top = std::max<int64_t>(top, l.max().item<int64_t>());
  at::Tensor sum = at::zeros({top + 1}, at::kDouble), count = at::zeros({top + 1}, at::kDouble);
  for (size_t i = 0; i < images.size(); ++i) {
    const at::Tensor l = labels[i].reshape(-1).to(at::kLong).clamp_min(0).cpu();
    sum.index_add_(0, l, images[i].reshape(-1).to(at::kDouble).cpu());
    count.index_add_(0, l, at::ones_like(l, at::kDouble));
  }
  return at::where(count > 0, sum / count.clamp_min(1), at::full_like(sum, -1.0)).to(at::kFloat);
}

at::Tensor synthesize_image(const at::Tensor& labels, const at::Tensor& table) {
  const at::Tensor l = labels.to(at::kLong).clamp(0, table.size(0));  // past the table: dark
  const at::Tensor padded = at::cat({table.clamp_min(0), at::zeros({1}, table.options())});
  const at::Tensor jitter = 0.85 + 0.3 * at::rand_like(padded);
  at::Tensor image = (padded * jitter).index({l.reshape(-1)}).reshape(labels.sizes());
  image = image + at::randn_like(image) * 0.03;
  image = at::avg_pool3d(image, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, /*count_include_pad=*/false);
  return augment_intensity(image);
}

}  // namespace autoreg::registration
