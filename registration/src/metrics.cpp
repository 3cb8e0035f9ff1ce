#include "autoreg/registration/metrics.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"

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

JacobianStats jacobian_stats(const at::Tensor& displacement) {
  // In slabs along D with a one-voxel halo, so that every voxel gets the derivatives the
  // whole volume would give it, while float64 temporaries stay small (a 256³ field in
  // one piece needs ~2.5 GB of them).
  const int64_t depth = displacement.size(2), slab = 16;
  double count = 0, non_positive = 0, positive = 0, sum = 0, sum_sq = 0;
  for (int64_t z0 = 0; z0 < depth; z0 += slab) {
    const int64_t z1 = std::min(depth, z0 + slab);
    const int64_t lo = std::max<int64_t>(0, z0 - 1), hi = std::min(depth, z1 + 1);
    const at::Tensor det = ops::jacobian_determinant(displacement.slice(2, lo, hi).to(at::kDouble))
                               .slice(2, z0 - lo, z0 - lo + (z1 - z0));
    count += double(det.numel());
    non_positive += (det <= 0).sum().item<double>();
    const at::Tensor log_det = det.masked_select(det > 0).log();
    positive += double(log_det.numel());
    sum += log_det.sum().item<double>();
    sum_sq += log_det.pow(2).sum().item<double>();
  }
  JacobianStats s;
  s.non_positive_percent = count > 0 ? 100.0 * non_positive / count : 0.0;
  // Sample standard deviation (n − 1), as at::std.
  s.log_std = positive > 1 ? std::sqrt(std::max(0.0, (sum_sq - sum * sum / positive) / (positive - 1))) : 0.0;
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

}  // namespace autoreg::registration
