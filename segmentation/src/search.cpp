#include "search.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <vector>

#include "local_stats.h"

namespace autoreg::segmentation::detail {

std::pair<at::Tensor, at::Tensor> match(const at::Tensor& target_in, const at::Tensor& atlas_in,
                                        const at::Tensor& labels_in, int s, int r) {
  const at::Tensor target = target_in.to(at::kFloat).contiguous();
  const at::Tensor labels = labels_in.to(at::kInt).contiguous();
  if (s <= 0) return {atlas_in.to(at::kFloat).contiguous(), labels};
  const int64_t d = target.size(0), h = target.size(1), w = target.size(2);
  // The atlas with its faces repeated s voxels outward: every shifted view is a slice.
  const auto pad = [s](const at::Tensor& x) {
    return at::replication_pad3d(x.to(at::kFloat).unsqueeze(0).unsqueeze(0), {s, s, s, s, s, s})[0][0].contiguous();
  };
  const at::Tensor atlas = pad(atlas_in);
  // Offsets nearest first, so that a strict improvement is needed to move away from 0.
  std::vector<std::array<int, 3>> offsets;
  for (int z = -s; z <= s; ++z)
    for (int y = -s; y <= s; ++y)
      for (int x = -s; x <= s; ++x) offsets.push_back({z, y, x});
  std::stable_sort(offsets.begin(), offsets.end(), [](const auto& a, const auto& b) {
    return a[0] * a[0] + a[1] * a[1] + a[2] * a[2] < b[0] * b[0] + b[1] * b[1] + b[2] * b[2];
  });
  at::Tensor best = at::full({d, h, w}, INFINITY, at::kFloat);
  at::Tensor chosen = at::zeros({d, h, w}, at::kShort);
  for (size_t k = 0; k < offsets.size(); ++k) {
    const auto& o = offsets[k];
    const at::Tensor shifted =
        atlas.slice(0, s + o[0], s + o[0] + d).slice(1, s + o[1], s + o[1] + h).slice(2, s + o[2], s + o[2] + w);
    const at::Tensor msd = box_mean((target - shifted).square_(), r);
    // Better by more than rounding: flat regions, where offsets tie, keep the nearest.
    const at::Tensor better = msd < best;
    best = at::where(better, msd, best);
    chosen.masked_fill_(better, int64_t(k));
  }
  // Where each voxel reads the padded volumes: its own position moved by its offset.
  const int64_t hp = h + 2 * s, wp = w + 2 * s;
  std::vector<int64_t> step(offsets.size());
  for (size_t k = 0; k < offsets.size(); ++k) {
    step[k] = (offsets[k][0] + s) * hp * wp + (offsets[k][1] + s) * wp + (offsets[k][2] + s);
  }
  const at::Tensor steps = at::tensor(step, at::kLong);
  const at::Tensor base = (at::arange(d, at::kLong).view({d, 1, 1}) * (hp * wp) +
                           at::arange(h, at::kLong).view({1, h, 1}) * wp + at::arange(w, at::kLong).view({1, 1, w}));
  const at::Tensor where = base + steps.index_select(0, chosen.flatten().to(at::kLong)).view({d, h, w});
  return {atlas.take(where), pad(labels).take(where).round_().to(at::kInt)};
}

}  // namespace autoreg::segmentation::detail
