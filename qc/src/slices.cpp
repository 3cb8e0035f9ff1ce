#include "slices.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace autoreg::qc::detail {

namespace {

// The anatomical axis a letter names (0: L/R, 1: A/P, 2: S/I), -1 for any other.
int anatomical_axis(char letter) {
  switch (std::toupper(static_cast<unsigned char>(letter))) {
    case 'L': case 'R': return 0;
    case 'A': case 'P': return 1;
    case 'S': case 'I': return 2;
    default: return -1;
  }
}

char opposite(char letter) {
  switch (letter) {
    case 'L': return 'R';
    case 'R': return 'L';
    case 'A': return 'P';
    case 'P': return 'A';
    case 'S': return 'I';
    default: return 'S';
  }
}

// A plane whose pixel columns go towards `right` and whose rows towards `bottom` (the
// letters at the picture's right and bottom edges).
Plane anatomical_plane(const std::array<char, 3>& letters, const std::array<int, 3>& tensor_axis_of,
                       std::string name, int normal_axis, char right, char bottom) {
  Plane p;
  p.name = std::move(name);
  p.normal = tensor_axis_of[normal_axis];
  p.across = tensor_axis_of[anatomical_axis(right)];
  p.down = tensor_axis_of[anatomical_axis(bottom)];
  p.flip_across = std::toupper(static_cast<unsigned char>(letters[p.across])) != right;
  p.flip_down = std::toupper(static_cast<unsigned char>(letters[p.down])) != bottom;
  p.edges = {opposite(bottom), bottom, opposite(right), right};
  return p;
}

// Sample positions along one panel axis of `pixels` over a tensor axis of n voxels.
struct AxisSamples {
  std::vector<int64_t> lo, hi;  // the two voxels around each pixel's centre
  std::vector<float> t;         // the weight of hi
};
AxisSamples axis_samples(int64_t n, int pixels, bool flip) {
  AxisSamples s;
  for (int i = 0; i < pixels; ++i) {
    double u = (i + 0.5) * static_cast<double>(n) / pixels - 0.5;
    if (flip) u = static_cast<double>(n - 1) - u;
    u = std::clamp(u, 0.0, static_cast<double>(n - 1));
    const auto lo = static_cast<int64_t>(std::floor(u));
    s.lo.push_back(lo);
    s.hi.push_back(std::min(lo + 1, n - 1));
    s.t.push_back(static_cast<float>(u - static_cast<double>(lo)));
  }
  return s;
}

// Calls f(pixel index, offset of voxel (lo, lo), offset of (hi, lo), (lo, hi), (hi, hi),
// weight across, weight down) for every pixel of the panel.
template <typename F>
void for_each_pixel(const PanelGrid& g, F f) {
  const std::array<int64_t, 3> stride{g.size[1] * g.size[2], g.size[2], 1};
  const AxisSamples a = axis_samples(g.size[g.plane.across], g.width, g.plane.flip_across);
  const AxisSamples d = axis_samples(g.size[g.plane.down], g.height, g.plane.flip_down);
  const int64_t base = g.centre[g.plane.normal] * stride[g.plane.normal];
  const int64_t sa = stride[g.plane.across], sd = stride[g.plane.down];
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      const int64_t r0 = base + d.lo[y] * sd, r1 = base + d.hi[y] * sd;
      f(static_cast<size_t>(y) * g.width + x, r0 + a.lo[x] * sa, r0 + a.hi[x] * sa, r1 + a.lo[x] * sa,
        r1 + a.hi[x] * sa, a.t[x], d.t[y]);
    }
  }
}

template <typename T>
std::vector<T> nearest(const T* data, const PanelGrid& g) {
  std::vector<T> out(static_cast<size_t>(g.width) * g.height);
  for_each_pixel(g, [&](size_t i, int64_t v00, int64_t v10, int64_t v01, int64_t v11, float ta, float td) {
    out[i] = data[td < 0.5f ? (ta < 0.5f ? v00 : v10) : (ta < 0.5f ? v01 : v11)];
  });
  return out;
}

int64_t voxel_count(const std::array<int64_t, 3>& size) { return size[0] * size[1] * size[2]; }

}  // namespace

std::array<Plane, 3> display_planes(const std::array<char, 3>& letters) {
  std::array<int, 3> tensor_axis_of{-1, -1, -1};  // anatomical axis → tensor axis
  bool valid = true;
  for (int i = 0; i < 3; ++i) {
    const int a = anatomical_axis(letters[i]);
    if (a < 0 || tensor_axis_of[a] >= 0) {
      valid = false;
      break;
    }
    tensor_axis_of[a] = i;
  }
  if (!valid) {
    Plane d{0, 2, 1, false, false, "plane D", {}};
    Plane h{1, 2, 0, false, false, "plane H", {}};
    Plane w{2, 1, 0, false, false, "plane W", {}};
    return {d, h, w};
  }
  // Radiological: the patient's right on the picture's left, anterior (axial) or
  // superior (coronal, sagittal) at the top, anterior on the left (sagittal).
  return {anatomical_plane(letters, tensor_axis_of, "axial", 2, 'L', 'P'),
          anatomical_plane(letters, tensor_axis_of, "coronal", 1, 'L', 'I'),
          anatomical_plane(letters, tensor_axis_of, "sagittal", 0, 'P', 'I')};
}

float quantile(std::vector<float>& values, double q) {
  if (values.empty()) return std::nanf("");
  const auto k = static_cast<size_t>(std::llround(q * static_cast<double>(values.size() - 1)));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

namespace {
// Every finite voxel of a sample of at most ~1M (a fixed stride): inside `inside` where
// given, non-zero ones only when asked.
std::vector<float> finite_sample(const VolumeView& v, bool nonzero_only, const MaskView& inside = {}) {
  const int64_t n = voxel_count(v.size);
  const int64_t step = std::max<int64_t>(1, n / (1 << 20));
  std::vector<float> out;
  for (int64_t i = 0; i < n; i += step) {
    if (inside.data != nullptr && inside.data[i] == 0) continue;
    if (std::isfinite(v.data[i]) && (!nonzero_only || v.data[i] != 0.0f)) out.push_back(v.data[i]);
  }
  return out;
}
}  // namespace

Window grey_window(const VolumeView& v, const GreyWindow& given, const MaskView& inside) {
  if (std::isfinite(given.lo) && std::isfinite(given.hi) && given.hi > given.lo) return {given.lo, given.hi};
  std::vector<float> values = finite_sample(v, inside.data == nullptr, inside);
  if (values.empty()) values = finite_sample(v, false);
  Window w{quantile(values, 0.01), quantile(values, 0.99)};
  if (!(w.hi > w.lo)) {  // a constant image (e.g. a mask): show it from 0
    w.lo = std::min(0.0f, std::isfinite(w.lo) ? w.lo : 0.0f);
    w.hi = std::isfinite(w.hi) && w.hi > w.lo ? w.hi : w.lo + 1;
  }
  return w;
}

namespace {
// The rounded centroid of the voxels `in` says are in; `fallback` when none.
template <typename In>
std::array<int64_t, 3> centroid(const std::array<int64_t, 3>& size, In in, const std::array<int64_t, 3>& fallback) {
  std::array<double, 3> sum{0, 0, 0};
  double count = 0;
  int64_t i = 0;
  for (int64_t d = 0; d < size[0]; ++d) {
    for (int64_t h = 0; h < size[1]; ++h) {
      for (int64_t w = 0; w < size[2]; ++w, ++i) {
        if (in(i)) {
          sum[0] += d, sum[1] += h, sum[2] += w;
          ++count;
        }
      }
    }
  }
  std::array<int64_t, 3> centre = fallback;
  if (count > 0) {
    for (int a = 0; a < 3; ++a) centre[a] = std::llround(sum[a] / count);
  }
  return centre;
}
}  // namespace

std::array<int64_t, 3> foreground_centre(const VolumeView& v, const MaskView& inside) {
  std::vector<float> values = finite_sample(v, false, inside);
  if (values.empty()) values = finite_sample(v, false);
  const float threshold = 0.1f * quantile(values, 0.995);
  return centroid(v.size, [&](int64_t i) { return v.data[i] > threshold && (inside.data == nullptr || inside.data[i] != 0); },
                  {v.size[0] / 2, v.size[1] / 2, v.size[2] / 2});  // false for NaN
}

std::array<int64_t, 3> label_centre(const LabelView& labels) {
  return centroid(labels.size, [&](int64_t i) { return labels.data[i] != 0; }, {-1, -1, -1});
}

std::vector<float> sample_linear(const float* data, const PanelGrid& g) {
  std::vector<float> out(static_cast<size_t>(g.width) * g.height);
  for_each_pixel(g, [&](size_t i, int64_t v00, int64_t v10, int64_t v01, int64_t v11, float ta, float td) {
    const float top = data[v00] + ta * (data[v10] - data[v00]);
    const float bottom = data[v01] + ta * (data[v11] - data[v01]);
    out[i] = top + td * (bottom - top);
  });
  return out;
}

std::vector<float> sample_nearest(const float* data, const PanelGrid& g) { return nearest(data, g); }
std::vector<int32_t> sample_nearest(const int32_t* data, const PanelGrid& g) { return nearest(data, g); }
std::vector<uint8_t> sample_nearest(const uint8_t* data, const PanelGrid& g) { return nearest(data, g); }

}  // namespace autoreg::qc::detail
