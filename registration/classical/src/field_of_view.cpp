#include "autoreg/registration/field_of_view.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace autoreg::registration {
namespace {

// Whether `value` is an isolated spike of `data`'s histogram: fewer than 5 % as many
// voxels within 1 % of the range above it as on it.
bool isolated_spike(const at::Tensor& data, double value, double max) {
  const double width = 0.01 * (max - value);
  const double on = data.eq(value).sum().item<double>();
  const double near = (data.gt(value) & data.le(value + width)).sum().item<double>();
  return on > 0 && near < 0.05 * on;
}

// 1 for the voxels connected to the grid's faces through voxels where `padding` is 1, as
// uint8 D×H×W: a scan-line flood fill from every face voxel (each seed fills its run along
// the row and seeds the runs it touches in the four neighbouring rows), a tenth of the
// queue work of a voxel-by-voxel search on a CBCT whose padding is 90 % of the grid.
std::vector<uint8_t> border_connected(const uint8_t* padding, int64_t D, int64_t H, int64_t W) {
  std::vector<uint8_t> outside(size_t(D * H * W), 0);
  std::vector<int64_t> seeds;
  const auto open = [&](int64_t v) { return padding[v] && !outside[size_t(v)]; };
  // Seeds at the start of every open run of row `row` within [l, r].
  const auto seed_runs = [&](int64_t row, int64_t l, int64_t r) {
    for (int64_t i = l; i <= r; ++i) {
      if (open(row + i) && (i == l || !open(row + i - 1))) seeds.push_back(row + i);
    }
  };
  for (int64_t k = 0; k < D; ++k) {
    for (int64_t j = 0; j < H; ++j) {
      const int64_t row = (k * H + j) * W;
      if (k == 0 || k == D - 1 || j == 0 || j == H - 1) {
        seed_runs(row, 0, W - 1);
      } else {
        seeds.push_back(row);
        seeds.push_back(row + W - 1);
      }
    }
  }
  while (!seeds.empty()) {
    const int64_t v = seeds.back();
    seeds.pop_back();
    if (!open(v)) continue;
    const int64_t row = v - v % W, k = v / (W * H), j = (v / W) % H;
    int64_t l = v - row, r = l;
    while (l > 0 && open(row + l - 1)) --l;
    while (r + 1 < W && open(row + r + 1)) ++r;
    std::fill(outside.begin() + row + l, outside.begin() + row + r + 1, uint8_t(1));
    if (j > 0) seed_runs(row - W, l, r);
    if (j + 1 < H) seed_runs(row + W, l, r);
    if (k > 0) seed_runs(row - W * H, l, r);
    if (k + 1 < D) seed_runs(row + W * H, l, r);
  }
  return outside;
}

}  // namespace

FieldOfView field_of_view(const at::Tensor& data, std::optional<double> padding) {
  TORCH_CHECK(data.dim() == 5 && data.size(0) == 1 && data.size(1) == 1, "field_of_view: the image must be 1×1×D×H×W, got ",
              data.sizes());
  const at::Tensor x = data.to(at::kCPU, at::kFloat).contiguous();
  FieldOfView fov;
  if (x.numel() == 0) return fov;
  double value = 0;
  if (padding) {
    value = *padding;
  } else {
    const double lo = x.min().item<double>(), hi = x.max().item<double>();
    if (lo > -500 || !isolated_spike(x, lo, hi)) return fov;
    value = lo;
  }
  const int64_t D = x.size(2), H = x.size(3), W = x.size(4);
  const at::Tensor is_padding = x.eq(float(value)).to(at::kByte).contiguous();
  const std::vector<uint8_t> outside = border_connected(is_padding.data_ptr<uint8_t>(), D, H, W);
  int64_t count = 0;
  for (uint8_t o : outside) count += o;
  const double fraction = double(count) / double(x.numel());
  if (count == x.numel() || fraction < 0.01) return fov;
  at::Tensor inside = at::empty({1, 1, D, H, W}, at::kFloat);
  float* out = inside.data_ptr<float>();
  for (size_t v = 0; v < outside.size(); ++v) out[v] = outside[v] ? 0.0f : 1.0f;
  fov.inside = inside;
  fov.padding = value;
  fov.outside_fraction = fraction;
  return fov;
}


at::Tensor away_from_edge(const at::Tensor& inside, const std::array<double, 3>& spacing, double margin_mm) {
  TORCH_CHECK(inside.dim() == 5 && inside.size(0) == 1 && inside.size(1) == 1,
              "away_from_edge: the mask must be 1×1×D×H×W, got ", inside.sizes());
  // The outside, pooled onto a grid of about 3 mm (any voxel outside makes its cell
  // outside), grown by the margin along each axis in turn (a box: separable), and brought
  // back to the full grid: a few tenths of a second on a 512×512×105 CBCT, where growing
  // it at full resolution takes seconds.
  at::Tensor outside = 1 - inside.to(at::kCPU, at::kFloat);
  std::array<int64_t, 3> cell{}, reach{};
  for (int a = 0; a < 3; ++a) {
    cell[size_t(a)] = std::max<int64_t>(1, std::llround(3.0 / std::max(1e-6, spacing[size_t(a)])));
    reach[size_t(a)] = int64_t(std::ceil(margin_mm / (double(cell[size_t(a)]) * spacing[size_t(a)])));
  }
  at::Tensor coarse = at::max_pool3d(outside, {cell[0], cell[1], cell[2]}, {cell[0], cell[1], cell[2]}, {0, 0, 0},
                                     {1, 1, 1}, /*ceil_mode=*/true);
  for (int a = 0; a < 3; ++a) {
    std::array<int64_t, 3> kernel{1, 1, 1}, pad{0, 0, 0};
    kernel[size_t(a)] = 2 * reach[size_t(a)] + 1;
    pad[size_t(a)] = reach[size_t(a)];
    // max_pool3d pads with −inf: beyond the grid counts as inside, as in field_of_view
    // (the grid's faces are outside only where padding reaches them).
    coarse = at::max_pool3d(coarse, {kernel[0], kernel[1], kernel[2]}, {1, 1, 1}, {pad[0], pad[1], pad[2]});
  }
  at::Tensor grown = coarse;
  for (int a = 0; a < 3; ++a) {
    grown = grown.repeat_interleave(cell[size_t(a)], 2 + a).slice(2 + a, 0, inside.size(2 + a));
  }
  return (1 - grown).contiguous();
}

at::Tensor enclosed_gas(const at::Tensor& data, double threshold, const std::array<double, 3>& spacing, double grow_mm) {
  TORCH_CHECK(data.dim() == 5 && data.size(0) == 1 && data.size(1) == 1, "enclosed_gas: the image must be 1×1×D×H×W, got ",
              data.sizes());
  const at::Tensor low = data.to(at::kCPU, at::kFloat).lt(threshold).to(at::kByte).contiguous();
  const int64_t D = low.size(2), H = low.size(3), W = low.size(4);
  const std::vector<uint8_t> outside = border_connected(low.data_ptr<uint8_t>(), D, H, W);
  at::Tensor gas = at::empty({1, 1, D, H, W}, at::kFloat);
  const uint8_t* l = low.data_ptr<uint8_t>();
  float* g = gas.data_ptr<float>();
  for (size_t v = 0; v < outside.size(); ++v) g[v] = l[v] && !outside[v] ? 1.0f : 0.0f;
  for (int a = 0; a < 3; ++a) {  // grown along each axis in turn (a box)
    const int64_t reach = std::llround(grow_mm / std::max(1e-6, spacing[size_t(a)]));
    if (reach < 1) continue;
    std::array<int64_t, 3> kernel{1, 1, 1}, pad{0, 0, 0};
    kernel[size_t(a)] = 2 * reach + 1;
    pad[size_t(a)] = reach;
    gas = at::max_pool3d(gas, {kernel[0], kernel[1], kernel[2]}, {1, 1, 1}, {pad[0], pad[1], pad[2]});
  }
  return gas.contiguous();
}

}  // namespace autoreg::registration
