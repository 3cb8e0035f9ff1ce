#include "autoreg/io/grid.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <itkIdentityTransform.h>
#include <itkLinearInterpolateImageFunction.h>
#include <itkNearestNeighborInterpolateImageFunction.h>
#include <itkResampleImageFilter.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "itk_bridge.h"

namespace autoreg::io {
namespace {

using namespace detail;

template <typename Pixel>
Volume resample_as(const Volume& v, const Geometry& ref, Resampling how, at::ScalarType dtype) {
  using Image = itk::Image<Pixel, 3>;
  const auto input = to_itk<Pixel>(v);
  typename Image::SizeType size;
  typename Image::SpacingType spacing;
  typename Image::PointType origin;
  typename Image::DirectionType direction;
  for (int a = 0; a < 3; ++a) {
    size[a] = static_cast<itk::SizeValueType>(ref.size[a]);
    spacing[a] = ref.spacing[a];
    origin[a] = ref.origin[a];
    for (int c = 0; c < 3; ++c) direction(a, c) = ref.direction[a * 3 + c];
  }
  auto filter = itk::ResampleImageFilter<Image, Image, double>::New();
  filter->SetInput(input);
  filter->SetTransform(itk::IdentityTransform<double, 3>::New());
  if (how == Resampling::Nearest) {
    filter->SetInterpolator(itk::NearestNeighborInterpolateImageFunction<Image, double>::New());
  } else {
    filter->SetInterpolator(itk::LinearInterpolateImageFunction<Image, double>::New());
  }
  filter->SetSize(size);
  filter->SetOutputSpacing(spacing);
  filter->SetOutputOrigin(origin);
  filter->SetOutputDirection(direction);
  filter->SetDefaultPixelValue(0);
  filter->Update();
  return from_itk<Pixel>(filter->GetOutput(), dtype);
}

}  // namespace

bool same_grid(const Geometry& a, const Geometry& b, double tolerance) {
  if (a.size != b.size) return false;
  for (int i = 0; i < 3; ++i) {
    if (std::abs(a.spacing[i] - b.spacing[i]) > tolerance) return false;
    if (std::abs(a.origin[i] - b.origin[i]) > tolerance) return false;
  }
  for (int i = 0; i < 9; ++i) {
    if (std::abs(a.direction[i] - b.direction[i]) > tolerance) return false;
  }
  return true;
}

Volume resample(const Volume& volume, const Geometry& reference, Resampling how) {
  if (same_grid(volume.geometry, reference)) return {volume.data, reference};
  const at::ScalarType t = volume.data.scalar_type();
  TORCH_CHECK(t == at::kFloat || t == at::kInt, "resample: volume data must be float32 or int32, got ", t);
  return t == at::kFloat ? resample_as<float>(volume, reference, how, t)
                         : resample_as<int32_t>(volume, reference, how, t);
}

at::Tensor index_to_world(const Geometry& g) {
  at::Tensor m = at::eye(4, at::kDouble);
  auto a = m.accessor<double, 2>();
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) a[r][c] = g.direction[r * 3 + c] * g.spacing[c];
    a[r][3] = g.origin[r];
  }
  return m;
}

Geometry with_orientation(const Geometry& g, const std::string& code) {
  // Each letter's unit vector in ITK's LPS frame.
  const auto axis = [&](char c) -> std::array<double, 3> {
    switch (std::toupper(static_cast<unsigned char>(c))) {
      case 'L': return {1, 0, 0};
      case 'R': return {-1, 0, 0};
      case 'P': return {0, 1, 0};
      case 'A': return {0, -1, 0};
      case 'S': return {0, 0, 1};
      case 'I': return {0, 0, -1};
      default: throw std::invalid_argument("orientation '" + code + "': letters must be R, L, A, P, S or I");
    }
  };
  if (code.size() != 3) throw std::invalid_argument("orientation '" + code + "': give three letters, e.g. LIA");
  std::array<std::array<double, 3>, 3> columns{};
  std::array<bool, 3> used{};
  for (int a = 0; a < 3; ++a) {
    columns[a] = axis(code[a]);
    for (int r = 0; r < 3; ++r) {
      if (columns[a][r] == 0) continue;
      if (used[r]) throw std::invalid_argument("orientation '" + code + "': each of R/L, A/P, S/I once");
      used[r] = true;
    }
  }
  // Centre = origin + D·diag(s)·(n−1)/2, kept.
  std::array<double, 3> centre = g.origin;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) centre[r] += g.direction[r * 3 + c] * g.spacing[c] * (g.size[c] - 1) / 2.0;
  Geometry out = g;
  for (int r = 0; r < 3; ++r) {
    out.origin[r] = centre[r];
    for (int c = 0; c < 3; ++c) {
      out.direction[r * 3 + c] = columns[c][r];
      out.origin[r] -= columns[c][r] * g.spacing[c] * (g.size[c] - 1) / 2.0;
    }
  }
  return out;
}

std::string orientation_code(const Geometry& g) {
  // LPS row r, positive / negative: the letter.
  static const char kPlus[] = {'L', 'P', 'S'}, kMinus[] = {'R', 'A', 'I'};
  std::array<int, 3> rows{0, 1, 2}, best{};
  double best_score = -1;
  do {  // the axis a points along LPS row rows[a]
    double score = 0;
    for (int a = 0; a < 3; ++a) score += std::abs(g.direction[rows[a] * 3 + a]);
    if (score > best_score + 1e-12) {
      best_score = score;
      best = rows;
    }
  } while (std::next_permutation(rows.begin(), rows.end()));
  std::string code(3, ' ');
  for (int a = 0; a < 3; ++a) code[a] = g.direction[best[a] * 3 + a] >= 0 ? kPlus[best[a]] : kMinus[best[a]];
  return code;
}

at::Tensor physical_points(const Geometry& g) {
  // Channel r = origin_r + M_r0·i + M_r1·j + M_r2·k, by broadcasting three 1-D ramps:
  // no volume-sized temporaries beyond the output.
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor i = at::arange(g.size[0], opts).view({1, 1, -1});
  const at::Tensor j = at::arange(g.size[1], opts).view({1, -1, 1});
  const at::Tensor k = at::arange(g.size[2], opts).view({-1, 1, 1});
  const at::Tensor m = index_to_world(g);
  const auto acc = m.accessor<double, 2>();
  at::Tensor out = at::empty({1, 3, g.size[2], g.size[1], g.size[0]}, opts);
  for (int r = 0; r < 3; ++r) {
    // Each term is small (1-D); the sum broadcasts into the D×H×W channel.
    at::Tensor channel = out.select(1, r).squeeze(0);
    channel.copy_((k * float(acc[r][2]) + float(acc[r][3])) + j * float(acc[r][1]));
    channel.add_(i * float(acc[r][0]));
  }
  return out;
}

at::Tensor sample_at(const Volume& volume, const at::Tensor& points) {
  TORCH_CHECK(points.dim() == 5 && points.size(0) == 1 && points.size(1) == 3,
              "sample_at: points must be 1×3×D×H×W, got ", points.sizes());
  const at::ScalarType t = volume.data.scalar_type();
  TORCH_CHECK(t == at::kFloat || t == at::kInt, "sample_at: volume data must be float32 or int32, got ", t);
  // Physical → continuous voxel index (float64 matrix, one affine map per point).
  const at::Tensor to_index = at::inverse(index_to_world(volume.geometry));
  const at::Tensor index = at::einsum("rc,ncdhw->ndhwr", {to_index.slice(0, 0, 3).slice(1, 0, 3).to(at::kFloat),
                                                         points.to(at::kFloat)}) +
                           to_index.slice(0, 0, 3).select(1, 3).to(at::kFloat);
  // Inside the voxels' extent, [-0.5, n - 0.5) along each axis (ITK's IsInsideBuffer).
  at::Tensor size = at::empty({3}, at::kFloat), scale = at::empty({3}, at::kFloat);
  for (int a = 0; a < 3; ++a) {
    const int64_t n = volume.geometry.size[a];
    size[a] = float(n);
    scale[a] = n > 1 ? 2.0f / float(n - 1) : 0.0f;
  }
  const at::Tensor inside = ((index >= -0.5) & (index < size - 0.5)).all(-1).unsqueeze(1);
  // grid_sampler's [-1, 1] per axis (align_corners), clamped to the border voxels.
  const at::Tensor grid = (index * scale - (scale > 0).to(at::kFloat)).contiguous();
  const bool labels = t == at::kInt;
  const at::Tensor out = at::grid_sampler(volume.data.to(at::kFloat), grid, labels ? /*nearest*/ 1 : /*bilinear*/ 0,
                                          /*border*/ 1, /*align_corners=*/true)
                             .masked_fill(inside.logical_not(), 0.0f);
  return labels ? out.round().to(at::kInt) : out;
}

std::optional<at::Tensor> sample_on_parallel_grid(const Volume& volume, const Geometry& target,
                                                  Outside outside) {
  const at::Tensor& data = volume.data;
  TORCH_CHECK(data.dim() == 5 && data.size(0) == 1 && data.scalar_type() == at::kFloat,
              "sample_on_parallel_grid: volume data must be float32 1×C×D×H×W, got ", data.sizes());
  const Geometry& g = volume.geometry;
  const auto column = [](const Geometry& x, int a, int r) { return x.direction[3 * r + a]; };
  // Each target axis b: the volume axis it runs along, and which way.
  std::array<int, 3> source{};
  std::array<double, 3> sign{};
  std::array<bool, 3> taken{};
  for (int b = 0; b < 3; ++b) {
    int found = -1;
    for (int a = 0; a < 3; ++a) {
      double dot = 0;
      for (int r = 0; r < 3; ++r) dot += column(g, a, r) * column(target, b, r);
      if (std::abs(std::abs(dot) - 1) < 1e-6 && !taken[a]) {
        found = a;
        sign[b] = dot > 0 ? 1 : -1;
      }
    }
    if (found < 0) return std::nullopt;
    taken[found] = true;
    source[b] = found;
  }
  // Per target axis b: the two source indices along source[b] and the weight of the
  // second for every target index, and whether it lies within the volume's extent.
  struct Axis {
    std::vector<int64_t> lo, hi;
    std::vector<float> w, inside;
  };
  std::array<Axis, 3> axes;
  const std::array<int64_t, 3> stride = {1, data.size(4), data.size(4) * data.size(3)};  // along i, j, k
  for (int b = 0; b < 3; ++b) {
    const int a = source[b];
    const int64_t n = g.size[a], m = target.size[b];
    // Continuous volume index along a of target voxel t along b: offset + step · t.
    double offset = 0;
    for (int r = 0; r < 3; ++r) offset += column(g, a, r) * (target.origin[r] - g.origin[r]);
    offset /= g.spacing[a];
    const double step = sign[b] * target.spacing[b] / g.spacing[a];
    Axis& ax = axes[size_t(b)];
    for (int64_t t = 0; t < m; ++t) {
      const double c = offset + step * double(t);
      const double clamped = std::clamp(c, 0.0, double(n - 1));
      const int64_t lo = std::min<int64_t>(int64_t(std::floor(clamped)), n - 1);
      ax.lo.push_back(lo * stride[size_t(a)]);
      ax.hi.push_back(std::min<int64_t>(lo + 1, n - 1) * stride[size_t(a)]);
      ax.w.push_back(float(clamped - double(lo)));
      const bool inside = outside == Outside::Border || (c >= -0.5 && c < double(n) - 0.5);
      ax.inside.push_back(inside ? 1.0f : 0.0f);
    }
  }
  // Trilinear from the tables, straight into the output (no volume-sized temporaries:
  // a 3-channel field onto a 256³ grid took 800 MB of them one axis at a time).
  const at::Tensor src = data.contiguous();
  const int64_t channels = src.size(1), source_voxels = src.numel() / channels;
  const int64_t W = target.size[0], H = target.size[1], D = target.size[2];
  at::Tensor out = at::empty({1, channels, D, H, W}, src.options());
  const float* in = src.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, channels * D * H, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row / (D * H), k = (row / H) % D, j = row % H;
      const float* s = in + c * source_voxels;
      float* dst = o + row * W;
      const float wk = axes[2].w[size_t(k)], wj = axes[1].w[size_t(j)];
      const float scale = axes[2].inside[size_t(k)] * axes[1].inside[size_t(j)];
      const int64_t k0 = axes[2].lo[size_t(k)], k1 = axes[2].hi[size_t(k)];
      const int64_t j0 = axes[1].lo[size_t(j)], j1 = axes[1].hi[size_t(j)];
      const float* s00 = s + k0 + j0;
      const float* s01 = s + k0 + j1;
      const float* s10 = s + k1 + j0;
      const float* s11 = s + k1 + j1;
      for (int64_t i = 0; i < W; ++i) {
        const int64_t i0 = axes[0].lo[size_t(i)], i1 = axes[0].hi[size_t(i)];
        const float wi = axes[0].w[size_t(i)];
        const float a00 = s00[i0] + wi * (s00[i1] - s00[i0]), a01 = s01[i0] + wi * (s01[i1] - s01[i0]);
        const float a10 = s10[i0] + wi * (s10[i1] - s10[i0]), a11 = s11[i0] + wi * (s11[i1] - s11[i0]);
        const float b0 = a00 + wj * (a01 - a00), b1 = a10 + wj * (a11 - a10);
        dst[i] = (b0 + wk * (b1 - b0)) * (scale * axes[0].inside[size_t(i)]);
      }
    }
  });
  return out;
}

std::array<double, 2> intensity_percentiles(const at::Tensor& data, double lower_percent, double upper_percent,
                                            const at::Tensor& mask) {
  TORCH_CHECK(0 <= lower_percent && lower_percent < upper_percent && upper_percent <= 100,
              "normalize_intensity: need 0 <= lower < upper <= 100, got ", lower_percent, ", ",
              upper_percent);
  TORCH_CHECK(!mask.defined() || mask.sizes() == data.sizes(), "normalize_intensity: the mask must be ", data.sizes(),
              ", got ", mask.sizes());
  at::Tensor flat = data.reshape({-1}).to(at::kFloat);
  if (mask.defined()) flat = flat.masked_select(mask.reshape({-1}).to(flat.device()).ne(0));
  if (flat.numel() == 0) return {0, 0};
  // Percentiles of a subsample (exact enough for scaling), each by selection: the
  // values sorting the subsample would give, in O(n) (the
  // normalise stage of a 256×256×160 pair, two volumes: 0.2 s → 0.08 s).
  const int64_t step = std::max<int64_t>(1, flat.numel() / 1000000);
  const at::Tensor sample = flat.slice(0, 0, flat.numel(), step).cpu().contiguous();
  std::vector<float> values(sample.data_ptr<float>(), sample.data_ptr<float>() + sample.numel());
  const auto at_percent = [&](double p) {
    const auto i = values.begin() + std::llround(p / 100.0 * double(values.size() - 1));
    std::nth_element(values.begin(), i, values.end());
    return double(*i);
  };
  return {at_percent(lower_percent), at_percent(upper_percent)};
}

at::Tensor normalize_window(const at::Tensor& data, double lo, double hi) {
  if (hi <= lo) return at::zeros(data.sizes(), data.options().dtype(at::kFloat));  // constant image
  // One new volume, updated in place.
  at::Tensor out = data.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
  return out.sub_(lo).div_(hi - lo).clamp_(0.0, 1.0);
}

at::Tensor normalize_intensity(const at::Tensor& data, double lower_percent, double upper_percent,
                               const at::Tensor& mask) {
  if (data.numel() == 0) return data.to(at::kFloat);
  const auto [lo, hi] = intensity_percentiles(data, lower_percent, upper_percent, mask);
  return normalize_window(data, lo, hi);
}

}  // namespace autoreg::io
