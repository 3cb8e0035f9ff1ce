#include "autoreg/registration/metrics.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "autoreg/ops.h"
#include "autoreg/registration/labels.h"

namespace autoreg::registration {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Squared Euclidean distance transform along one line (Felzenszwalb & Huttenlocher):
// f holds squared distances so far (0 at sources, ∞ elsewhere); s is the spacing.
void edt_line(double* f, int64_t n, int64_t stride, double s, std::vector<double>& d,
              std::vector<int64_t>& v, std::vector<double>& z) {
  d.resize(n);
  v.resize(n);
  z.resize(n + 1);
  int64_t k = -1;
  for (int64_t q = 0; q < n; ++q) {
    const double fq = f[q * stride];
    if (fq == kInf) continue;
    const double pq = q * s;
    while (k >= 0) {
      const double pv = v[k] * s;
      const double x = ((fq + pq * pq) - (f[v[k] * stride] + pv * pv)) / (2 * (pq - pv));
      if (x <= z[k]) {
        --k;
      } else {
        break;
      }
    }
    ++k;
    v[k] = q;
    z[k] = k == 0 ? -kInf
                  : ((fq + pq * pq) - (f[v[k - 1] * stride] + (v[k - 1] * s) * (v[k - 1] * s))) /
                        (2 * (pq - v[k - 1] * s));
    z[k + 1] = kInf;
  }
  if (k < 0) return;  // no source on this line: distances stay ∞
  int64_t j = 0;
  for (int64_t q = 0; q < n; ++q) {
    while (z[j + 1] < q * s) ++j;
    const double dx = (q - v[j]) * s;
    d[q] = dx * dx + f[v[j] * stride];
  }
  for (int64_t q = 0; q < n; ++q) f[q * stride] = d[q];
}

// In place: squared distance to the nearest source (0 entries) of a D×H×W volume.
void squared_edt(at::Tensor& f, const std::array<double, 3>& spacing) {
  const int64_t D = f.size(0), H = f.size(1), W = f.size(2);
  double* p = f.data_ptr<double>();
  std::vector<double> d, z;
  std::vector<int64_t> v;
  for (int64_t a = 0; a < D; ++a)
    for (int64_t b = 0; b < H; ++b) edt_line(p + (a * H + b) * W, W, 1, spacing[2], d, v, z);
  for (int64_t a = 0; a < D; ++a)
    for (int64_t c = 0; c < W; ++c) edt_line(p + a * H * W + c, H, W, spacing[1], d, v, z);
  for (int64_t b = 0; b < H; ++b)
    for (int64_t c = 0; c < W; ++c) edt_line(p + b * W + c, D, H * W, spacing[0], d, v, z);
}

// Label voxels with a 6-neighbour outside the label (or outside the volume).
at::Tensor surface(const at::Tensor& mask) {
  const at::Tensor padded = at::constant_pad_nd(mask.to(at::kFloat), {1, 1, 1, 1, 1, 1}, 0);
  at::Tensor interior = mask.to(at::kBool).clone();
  const int64_t D = mask.size(0), H = mask.size(1), W = mask.size(2);
  for (int dim = 0; dim < 3; ++dim)
    for (int shift : {0, 2}) {
      const at::Tensor n = padded.narrow(0, dim == 0 ? shift : 1, D)
                               .narrow(1, dim == 1 ? shift : 1, H)
                               .narrow(2, dim == 2 ? shift : 1, W);
      interior &= n > 0.5;
    }
  return mask.to(at::kBool) & ~interior;
}

double percentile95(at::Tensor values) {
  if (values.numel() == 0) return std::numeric_limits<double>::quiet_NaN();
  const at::Tensor sorted = std::get<0>(values.sort());
  const int64_t i = std::llround(0.95 * double(values.numel() - 1));
  return sorted[i].item<double>();
}

}  // namespace

double dice(const at::Tensor& a, const at::Tensor& b, int64_t label) {
  TORCH_CHECK(a.sizes() == b.sizes(), "dice: label maps differ in size: ", a.sizes(), " vs ", b.sizes());
  const at::Tensor ma = a == label, mb = b == label;
  const double total = ma.sum().item<double>() + mb.sum().item<double>();
  return total == 0 ? 1.0 : 2.0 * (ma & mb).sum().item<double>() / total;
}

double hd95(const at::Tensor& a, const at::Tensor& b, int64_t label,
            const std::array<double, 3>& spacing) {
  TORCH_CHECK(a.dim() == 5 && a.sizes() == b.sizes(), "hd95: need two 1×1×D×H×W label maps of one size");
  const at::Tensor ma = (a[0][0] == label), mb = (b[0][0] == label);
  if (!ma.any().item<bool>() || !mb.any().item<bool>()) return std::numeric_limits<double>::quiet_NaN();
  // Work inside the bounding box of both labels: it holds every surface voxel.
  const at::Tensor where = at::nonzero(ma | mb);
  const at::Tensor lo = std::get<0>(where.min(0)), hi = std::get<0>(where.max(0));
  auto crop = [&](const at::Tensor& t) {
    at::Tensor c = t;
    for (int d = 0; d < 3; ++d) {
      const int64_t l = lo[d].item<int64_t>(), h = hi[d].item<int64_t>();
      c = c.narrow(d, l, h - l + 1);
    }
    return c.contiguous();
  };
  const at::Tensor sa = surface(crop(ma)), sb = surface(crop(mb));
  auto directed = [&](const at::Tensor& from, const at::Tensor& to) {
    at::Tensor f = at::where(to, 0.0, kInf).to(at::kDouble).contiguous();
    squared_edt(f, spacing);
    return percentile95(f.masked_select(from).sqrt());
  };
  return std::max(directed(sa, sb), directed(sb, sa));
}

namespace {

struct JacobianSums {
  double count = 0, non_positive = 0, positive = 0, sum = 0, sum_sq = 0;
  void add(const JacobianSums& o) {
    count += o.count;
    non_positive += o.non_positive;
    positive += o.positive;
    sum += o.sum;
    sum_sq += o.sum_sq;
  }
};

// One pass over a contiguous float32 field on the CPU: the determinant of each voxel
// from the differences ops::jacobian_determinant takes (central inside, one-sided on
// the faces, none along an axis of length 1), in float64, summed per slice along D and
// the slices added in order (the same sums on any number of threads). No volume-sized
// temporaries: 0.16–0.18 s for a 256×256×160 field against 0.5–0.7 s in float64 slabs.
JacobianSums jacobian_sums_cpu(const at::Tensor& u) {
  const int64_t d = u.size(2), h = u.size(3), w = u.size(4), n = d * h * w;
  const float* p = u.data_ptr<float>();
  std::vector<JacobianSums> slices(static_cast<size_t>(d));
  const int64_t size[3] = {d, h, w}, stride[3] = {h * w, w, 1};
  at::parallel_for(0, d, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      JacobianSums acc;
      for (int64_t j = 0; j < h; ++j) {
        for (int64_t i = 0; i < w; ++i) {
          const int64_t at = k * stride[0] + j * stride[1] + i;
          const int64_t pos[3] = {k, j, i};
          double J[3][3];
          for (int a = 0; a < 3; ++a) {  // derivative along dimension a (D, H, W)
            int64_t lo = 0, hi = 0;
            double scale = 1.0;
            if (size[a] >= 2) {
              lo = pos[a] == 0 ? 0 : -1;
              hi = pos[a] == size[a] - 1 ? 0 : 1;
              scale = (pos[a] == 0 || pos[a] == size[a] - 1) ? 1.0 : 0.5;
            }
            for (int c = 0; c < 3; ++c) {
              const float* ch = p + c * n + at;
              const double diff = size[a] < 2 ? 0.0 : (double(ch[hi * stride[a]]) - double(ch[lo * stride[a]])) * scale;
              J[c][a] = diff + (c == a ? 1.0 : 0.0);
            }
          }
          const double det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                             J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                             J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
          acc.count += 1;
          if (det <= 0) {
            acc.non_positive += 1;
          } else if (det > 0) {
            const double l = std::log(det);
            acc.positive += 1;
            acc.sum += l;
            acc.sum_sq += l * l;
          }
        }
      }
      slices[size_t(k)] = acc;
    }
  });
  JacobianSums total;
  for (const auto& s : slices) total.add(s);
  return total;
}

}  // namespace

JacobianStats jacobian_stats(const at::Tensor& displacement) {
  JacobianSums t;
  if (displacement.device().is_cpu() && displacement.scalar_type() == at::kFloat && displacement.dim() == 5 &&
      displacement.size(0) == 1 && displacement.size(1) == 3) {
    t = jacobian_sums_cpu(displacement.contiguous());
  } else {
    // In slabs along D with a one-voxel halo, so that every voxel gets the derivatives
    // the whole volume would give it, while float64 temporaries stay small (a 256³ field
    // in one piece needs ~2.5 GB of them).
    const int64_t depth = displacement.size(2), slab = 16;
    for (int64_t z0 = 0; z0 < depth; z0 += slab) {
      const int64_t z1 = std::min(depth, z0 + slab);
      const int64_t lo = std::max<int64_t>(0, z0 - 1), hi = std::min(depth, z1 + 1);
      const at::Tensor det = ops::jacobian_determinant(displacement.slice(2, lo, hi).to(at::kDouble))
                                 .slice(2, z0 - lo, z0 - lo + (z1 - z0));
      t.count += double(det.numel());
      t.non_positive += (det <= 0).sum().item<double>();
      const at::Tensor log_det = det.masked_select(det > 0).log();
      t.positive += double(log_det.numel());
      t.sum += log_det.sum().item<double>();
      t.sum_sq += log_det.pow(2).sum().item<double>();
    }
  }
  JacobianStats s;
  s.non_positive_percent = t.count > 0 ? 100.0 * t.non_positive / t.count : 0.0;
  // Sample standard deviation (n − 1), as at::std.
  s.log_std = t.positive > 1 ? std::sqrt(std::max(0.0, (t.sum_sq - t.sum * t.sum / t.positive) / (t.positive - 1))) : 0.0;
  return s;
}

std::vector<int64_t> labels_present(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor values =
      std::get<0>(at::_unique(at::cat({a.reshape({-1}), b.reshape({-1})}).to(at::kLong)));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < values.numel(); ++i) {
    const int64_t v = values[i].item<int64_t>();
    if (v != 0) out.push_back(v);
  }
  return out;
}

double mean_dice(const at::Tensor& a, const at::Tensor& b) {
  const std::vector<int64_t> labels = shared_labels(a, b);
  if (labels.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (int64_t l : labels) sum += dice(a, b, l);
  return sum / double(labels.size());
}

double mean_dice_over_reference(const at::Tensor& reference, const at::Tensor& other) {
  const at::Tensor a = reference.reshape({-1}).to(at::kInt).contiguous(), b = other.reshape({-1}).to(at::kInt).contiguous();
  TORCH_CHECK(a.numel() == b.numel(), "mean_dice_over_reference: the maps differ in size");
  const int64_t lo = std::min(a.min().item<int64_t>(), b.min().item<int64_t>());
  const int64_t hi = std::max(a.max().item<int64_t>(), b.max().item<int64_t>());
  double sum = 0;
  if (hi - lo > (int64_t(1) << 24)) {  // sparse label values: label by label
    const std::vector<int64_t> labels = labels_present(a, a);
    if (labels.empty()) return std::numeric_limits<double>::quiet_NaN();
    for (int64_t l : labels) sum += dice(a, b, l);
    return sum / double(labels.size());
  }
  // Per-label counts in one pass (per-label passes took seconds for 100 labels of a
  // 256×256×160 volume).
  std::vector<int64_t> in_a(size_t(hi - lo + 1)), in_b(in_a.size()), both(in_a.size());
  const int32_t* pa = a.data_ptr<int32_t>();
  const int32_t* pb = b.data_ptr<int32_t>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    ++in_a[size_t(pa[i] - lo)];
    ++in_b[size_t(pb[i] - lo)];
    both[size_t(pa[i] - lo)] += pa[i] == pb[i];
  }
  // The reference's labels are the values it counts (0, the background, excepted).
  int64_t labels = 0;
  for (size_t k = 0; k < in_a.size(); ++k) {
    if (in_a[k] == 0 || int64_t(k) + lo == 0) continue;
    sum += 2.0 * double(both[k]) / double(in_a[k] + in_b[k]);
    ++labels;
  }
  return labels == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / double(labels);
}

}  // namespace autoreg::registration
