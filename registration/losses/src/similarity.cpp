#include "autoreg/registration/similarity.h"

#include "autoreg/ops.h"

#include "box_filter.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

namespace autoreg::registration {
namespace {

// Mean over a box of window[d] voxels along each axis, clipped at the borders, as three
// 1-D means (w_D + w_H + w_W instead of their product operations per voxel). With
// count_include_pad off each 1-D mean divides by its clipped length, and the product of
// the clipped lengths is the clipped box's size, so this equals the 3-D clipped mean.
at::Tensor box_mean(at::Tensor t, const NccWindow& window) {
  const bool odd = window[0] % 2 == 1 && window[1] % 2 == 1 && window[2] % 2 == 1;
  if (t.device().is_cpu() && t.scalar_type() == at::kFloat && odd) return detail::fast_box_mean(t, window);
  t = at::avg_pool3d(t, {window[0], 1, 1}, {1, 1, 1}, {window[0] / 2, 0, 0}, false, false);
  t = at::avg_pool3d(t, {1, window[1], 1}, {1, 1, 1}, {0, window[1] / 2, 0}, false, false);
  return at::avg_pool3d(t, {1, 1, window[2]}, {1, 1, 1}, {0, 0, window[2] / 2}, false, false);
}

at::Tensor box_mean(const at::Tensor& t, int64_t window) { return box_mean(t, NccWindow{window, window, window}); }

// The image shifted by `offset` voxels (out[x] = padded[x + offset]), from an image
// replicate-padded by `pad` on every side.
at::Tensor shifted(const at::Tensor& padded, const std::array<int64_t, 3>& offset, int64_t pad,
                   at::IntArrayRef size) {
  at::Tensor t = padded;
  for (int d = 0; d < 3; ++d) t = t.narrow(2 + d, pad + offset[d], size[d]);
  return t;
}

}  // namespace

at::Tensor local_ncc(const at::Tensor& a, const at::Tensor& b, int64_t window) {
  return local_ncc_map(a, b, window).mean();
}

at::Tensor local_ncc_map(const at::Tensor& a, const at::Tensor& b, int64_t window) {
  // A window wider than the volume (a coarse scale of a small one) shrinks to the widest
  // odd one that fits, alike along every axis (the cube).
  for (int64_t d = 2; d < a.dim(); ++d) window = std::min(window, a.size(d) % 2 ? a.size(d) : a.size(d) - 1);
  return local_ncc_map(a, b, NccWindow{window, window, window});
}

at::Tensor local_ncc_map(const at::Tensor& a, const at::Tensor& b, NccWindow window) {
  return local_ncc_map(a, b, window, at::Tensor());
}

at::Tensor local_ncc_map(const at::Tensor& a, const at::Tensor& b, NccWindow window, const at::Tensor& weight) {
  TORCH_CHECK(a.dim() == 5, "local_ncc: N×C×D×H×W images, got ", a.sizes());
  // Each axis's window at most the widest odd one that fits it.
  for (int d = 0; d < 3; ++d) {
    window[size_t(d)] = std::max<int64_t>(1, std::min(window[size_t(d)], a.size(2 + d) % 2 ? a.size(2 + d) : a.size(2 + d) - 1));
  }
  const double n = double(window[0]) * double(window[1]) * double(window[2]);
  if (weight.defined()) {
    // Each window's moments over its voxels inside the mask alone: a window that reaches
    // past a field of view's edge compares what lies inside, not the padding.
    const at::Tensor inside = box_mean(weight, window).clamp_min(1e-6);  // the window's share inside
    const at::Tensor wa = weight * a, wb = weight * b;
    const at::Tensor ma = box_mean(wa, window) / inside, mb = box_mean(wb, window) / inside;
    const at::Tensor cov = box_mean(wa * b, window) / inside - ma * mb;
    const at::Tensor va = (box_mean(wa * a, window) / inside - ma * ma).clamp_min(0);
    const at::Tensor vb = (box_mean(wb * b, window) / inside - mb * mb).clamp_min(0);
    return cov * cov / (va * vb + 1e-5 / (n * n));
  }
  const at::Tensor ma = box_mean(a, window), mb = box_mean(b, window);
  const at::Tensor cov = box_mean(a * b, window) - ma * mb;
  const at::Tensor va = (box_mean(a * a, window) - ma * ma).clamp_min(0);
  const at::Tensor vb = (box_mean(b * b, window) - mb * mb).clamp_min(0);
  // VoxelMorph's ε = 1e-5 on window sums, written for window means (÷ n² for n voxels).
  return cov * cov / (va * vb + 1e-5 / (n * n));
}

at::Tensor mind_ssc(const at::Tensor& image, int64_t radius, int64_t dilation) {
  TORCH_CHECK(image.dim() == 5 && image.size(1) == 1, "mind_ssc: image must be N×1×D×H×W, got ",
              image.sizes());
  TORCH_CHECK(radius >= 0 && dilation >= 1, "mind_ssc: radius must be >= 0 and dilation >= 1");
  // The six-neighbourhood, and its 12 pairs at distance √2 (opposite neighbours, at
  // distance 2, are left out as in the original MIND-SSC).
  const std::array<std::array<int64_t, 3>, 6> six = {
      {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}}};
  const at::IntArrayRef size = image.sizes().slice(2);
  const at::Tensor padded = at::replication_pad3d(
      image, {dilation, dilation, dilation, dilation, dilation, dilation});
  std::vector<at::Tensor> distances;
  for (size_t p = 0; p < six.size(); ++p) {
    for (size_t q = p + 1; q < six.size(); ++q) {
      if (p / 2 == q / 2) continue;  // opposite neighbours
      std::array<int64_t, 3> op{}, oq{};
      for (int d = 0; d < 3; ++d) {
        op[d] = six[p][d] * dilation;
        oq[d] = six[q][d] * dilation;
      }
      const at::Tensor diff = shifted(padded, op, dilation, size) - shifted(padded, oq, dilation, size);
      at::Tensor sq = diff * diff;
      if (radius > 0) {
        sq = box_mean(at::replication_pad3d(sq, {radius, radius, radius, radius, radius, radius}),
                      2 * radius + 1);
        for (int d = 0; d < 3; ++d) sq = sq.narrow(2 + d, radius, size[d]);
      }
      distances.push_back(sq);
    }
  }
  at::Tensor ssd = at::cat(distances, 1);  // N×12×D×H×W
  ssd = ssd - std::get<0>(ssd.min(1, /*keepdim=*/true));
  at::Tensor variance = ssd.mean(1, /*keepdim=*/true);
  const at::Tensor mean_variance = variance.mean().detach();
  variance = at::max(at::min(variance, mean_variance * 1000), mean_variance * 0.001).clamp_min(1e-8);
  return at::exp(-ssd / variance);
}

at::Tensor similarity_loss(Similarity kind, const at::Tensor& fixed, const at::Tensor& warped, int64_t window,
                           const at::Tensor& weight) {
  for (int64_t d = 2; d < fixed.dim(); ++d) window = std::min(window, fixed.size(d) % 2 ? fixed.size(d) : fixed.size(d) - 1);
  return similarity_loss(kind, fixed, warped, NccWindow{window, window, window}, weight);
}

at::Tensor similarity_loss(Similarity kind, const at::Tensor& fixed, const at::Tensor& warped, const NccWindow& window,
                           const at::Tensor& weight) {
  if (weight.defined()) {
    // Per-voxel losses, their mean weighted by the mask (ε: an empty mask gives 0, not NaN).
    at::Tensor per_voxel;
    switch (kind) {
      case Similarity::Ncc: per_voxel = 1 - local_ncc_map(fixed, warped, window, weight); break;
      case Similarity::Mse: per_voxel = (fixed - warped).pow(2).mean(1, /*keepdim=*/true); break;  // channels averaged, as unweighted
      case Similarity::Mind: per_voxel = (mind_ssc(fixed) - mind_ssc(warped)).pow(2).mean(1, /*keepdim=*/true); break;
    }
    return (per_voxel * weight).sum() / (weight.sum() + ops::kEmptyWeight);
  }
  switch (kind) {
    case Similarity::Ncc: return 1 - local_ncc_map(fixed, warped, window).mean();
    case Similarity::Mse: return (fixed - warped).pow(2).mean();
    case Similarity::Mind: return (mind_ssc(fixed) - mind_ssc(warped)).pow(2).mean();
  }
  return {};
}

}  // namespace autoreg::registration
