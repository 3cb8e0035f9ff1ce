#include "carried_mask.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "autoreg/io/mapped.h"
#include "autoreg/rt/grid.h"

namespace autoreg::pipeline::detail {
namespace {

// The box's first voxel's physical point becomes the origin; the size the box's.
template <typename G>
G cropped_grid(const G& grid, const Box& b) {
  G g = grid;
  for (int a = 0; a < 3; ++a) {
    g.size[size_t(a)] = b.hi[size_t(a)] - b.lo[size_t(a)];
    for (int c = 0; c < 3; ++c) {
      g.origin[size_t(a)] += grid.direction[size_t(3 * a + c)] * grid.spacing[size_t(c)] * double(b.lo[size_t(c)]);
    }
  }
  return g;
}

at::Tensor cropped(const at::Tensor& t, const Box& b) {
  return t.slice(2, b.lo[2], b.hi[2]).slice(3, b.lo[1], b.hi[1]).slice(4, b.lo[0], b.hi[0]);
}

// The fixed voxels p whose map p + u(p) (`reach[a]` voxels at most along axis a) can land
// in `moving_box` of the moving grid, with a voxel to spare, within the fixed grid.
Box reached(const Box& moving_box, const rt::Grid& moving, const rt::Grid& fixed, const std::array<double, 3>& reach) {
  std::array<double, 3> lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (int corner = 0; corner < 8; ++corner) {
    std::array<double, 3> v;
    for (int a = 0; a < 3; ++a) v[size_t(a)] = double((corner >> a) & 1 ? moving_box.hi[size_t(a)] : moving_box.lo[size_t(a)]) - 0.5;
    const auto f = rt::physical_to_index(fixed, rt::index_to_physical(moving, v));
    for (int a = 0; a < 3; ++a) lo[size_t(a)] = std::min(lo[size_t(a)], f[size_t(a)]), hi[size_t(a)] = std::max(hi[size_t(a)], f[size_t(a)]);
  }
  Box b;
  for (size_t a = 0; a < 3; ++a) {
    b.lo[a] = std::clamp<int64_t>(int64_t(std::floor(lo[a] - reach[a])) - 1, 0, fixed.size[a]);
    b.hi[a] = std::clamp<int64_t>(int64_t(std::ceil(hi[a] + reach[a])) + 2, 0, fixed.size[a]);
  }
  return b;
}

}  // namespace

MovingBox moving_box(const std::vector<uint8_t>& mask, const io::Geometry& grid) {
  const auto& n = grid.size;
  MovingBox m;
  Box& b = m.box;
  b.lo = {n[0], n[1], n[2]};
  b.hi = {0, 0, 0};
  for (int64_t k = 0, at = 0; k < n[2]; ++k) {
    for (int64_t j = 0; j < n[1]; ++j, at += n[0]) {
      const uint8_t* row = mask.data() + at;
      const int64_t first = std::find_if(row, row + n[0], [](uint8_t v) { return v != 0; }) - row;
      if (first == n[0]) continue;
      const int64_t last = n[0] - (std::find_if(std::make_reverse_iterator(row + n[0]), std::make_reverse_iterator(row),
                                                [](uint8_t v) { return v != 0; }) -
                                   std::make_reverse_iterator(row + n[0]));
      m.voxels += std::count_if(row + first, row + last, [](uint8_t v) { return v != 0; });
      b.lo = {std::min(b.lo[0], first), std::min(b.lo[1], j), std::min(b.lo[2], k)};
      b.hi = {std::max(b.hi[0], last), std::max(b.hi[1], j + 1), std::max(b.hi[2], k + 1)};
    }
  }
  if (b.empty()) return m;
  for (size_t a = 0; a < 3; ++a) b.lo[a] = std::max<int64_t>(0, b.lo[a] - 2), b.hi[a] = std::min(n[a], b.hi[a] + 2);
  const at::Tensor whole = at::from_blob(const_cast<uint8_t*>(mask.data()), {1, 1, n[2], n[1], n[0]}, at::kByte);
  m.volume = {cropped(whole, b).to(at::kFloat).contiguous(), cropped_grid(grid, b)};
  return m;
}

OnBox sampled_on_box(const MovingBox& part, const rt::Grid& moving, const rt::Grid& fixed, const io::Geometry& fixed_grid,
                     const std::array<double, 3>& reach, const at::Tensor& displacement) {
  OnBox on;
  on.box = reached(part.box, moving, fixed, reach);
  if (on.box.empty()) {
    on.values = at::zeros({1, 1, 0, 0, 0}, at::kFloat);
    return on;
  }
  const at::Tensor u = displacement.defined() ? cropped(displacement, on.box).contiguous() : at::Tensor();
  on.values = io::sample_mapped(part.volume, cropped_grid(fixed_grid, on.box), at::Tensor(), u).contiguous();
  return on;
}

std::vector<uint8_t> half_on_grid(const OnBox& on, const io::Geometry& fixed_grid) {
  const auto& n = fixed_grid.size;
  std::vector<uint8_t> mask(size_t(n[0] * n[1] * n[2]), 0);
  if (on.box.empty()) return mask;
  const float* v = on.values.data_ptr<float>();
  const Box& b = on.box;
  for (int64_t k = b.lo[2]; k < b.hi[2]; ++k) {
    for (int64_t j = b.lo[1]; j < b.hi[1]; ++j) {
      uint8_t* row = mask.data() + (k * n[1] + j) * n[0];
      for (int64_t i = b.lo[0]; i < b.hi[0]; ++i) row[i] = *v++ >= 0.5f;
    }
  }
  return mask;
}

rt::DicomSeries cropped_series(const rt::DicomSeries& series, const Box& box) {
  rt::DicomSeries s = series;
  s.grid = cropped_grid(series.grid, box);
  s.slices.assign(series.slices.begin() + box.lo[2], series.slices.begin() + box.hi[2]);
  return s;
}

}  // namespace autoreg::pipeline::detail
