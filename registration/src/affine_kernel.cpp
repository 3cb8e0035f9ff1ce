#include "affine_kernel.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace autoreg::registration::detail {
namespace {

// Per-sample results of the first pass.
struct Sample {
  float moved;                 // moving intensity
  std::array<float, 3> slope;  // its gradient with respect to the world point y
  bool inside;
};

// Trilinear value and gradient (in voxel index units) of the moving image at index x,
// which lies in [0, n − 1] along every axis; as grid_sampler with zero padding, a
// neighbour past the last voxel (x = n − 1 exactly) reads 0.
float trilinear(const AffineSamples& s, const std::array<double, 3>& x, std::array<float, 3>* g) {
  const int64_t w = s.size[0], h = s.size[1];
  std::array<int64_t, 3> lo{};
  std::array<bool, 3> has_hi{};
  std::array<float, 3> f{};
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::min<int64_t>(int64_t(x[a]), s.size[a] - 1);  // x >= 0: truncation is floor
    has_hi[a] = lo[a] + 1 < s.size[a];
    f[a] = float(x[a] - double(lo[a]));
  }
  float c[2][2][2];  // [k][j][i] offsets
  for (int dk = 0; dk < 2; ++dk)
    for (int dj = 0; dj < 2; ++dj)
      for (int di = 0; di < 2; ++di) {
        const bool ok = (!di || has_hi[0]) && (!dj || has_hi[1]) && (!dk || has_hi[2]);
        c[dk][dj][di] = ok ? s.moving[((lo[2] + dk) * h + lo[1] + dj) * w + lo[0] + di] : 0.0f;
      }
  const float wi[2] = {1 - f[0], f[0]}, wj[2] = {1 - f[1], f[1]}, wk[2] = {1 - f[2], f[2]};
  float value = 0, gi = 0, gj = 0, gk = 0;
  for (int dk = 0; dk < 2; ++dk)
    for (int dj = 0; dj < 2; ++dj) {
      value += wk[dk] * wj[dj] * (wi[0] * c[dk][dj][0] + wi[1] * c[dk][dj][1]);
      gi += wk[dk] * wj[dj] * (c[dk][dj][1] - c[dk][dj][0]);
    }
  for (int dk = 0; dk < 2; ++dk)
    for (int di = 0; di < 2; ++di) gj += wk[dk] * wi[di] * (c[dk][1][di] - c[dk][0][di]);
  for (int dj = 0; dj < 2; ++dj)
    for (int di = 0; di < 2; ++di) gk += wj[dj] * wi[di] * (c[1][dj][di] - c[0][dj][di]);
  *g = {gi, gj, gk};
  return value;
}

}  // namespace

double affine_loss(const AffineSamples& s, const std::array<double, 9>& m, const std::array<double, 3>& t,
                   const int64_t* index, int64_t samples, bool ncc, std::array<double, 9>* grad_m,
                   std::array<double, 3>* grad_t) {
  const int64_t n = index ? samples : s.count;
  std::vector<Sample> out(size_t(std::max<int64_t>(n, 0)));
  const auto& A = s.to_index;
  // Pass 1: sample the moving image and its slope with respect to y.
  at::parallel_for(0, n, 2048, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const int64_t p = index ? index[q] : q;
      const float* x = s.points + 3 * p;
      std::array<double, 3> y{}, v{};
      for (int r = 0; r < 3; ++r) y[r] = m[r * 3] * x[0] + m[r * 3 + 1] * x[1] + m[r * 3 + 2] * x[2] + t[r];
      bool inside = true;
      for (int r = 0; r < 3; ++r) {
        v[r] = A[r * 4] * y[0] + A[r * 4 + 1] * y[1] + A[r * 4 + 2] * y[2] + A[r * 4 + 3];
        inside = inside && v[r] >= 0 && v[r] <= double(s.size[r] - 1);
      }
      Sample& o = out[size_t(q)];
      o.inside = inside;
      if (!inside) continue;
      std::array<float, 3> g{};
      o.moved = trilinear(s, v, &g);
      for (int c = 0; c < 3; ++c) {  // chain through index = A·y: slope_c = Σ_r g_r A_rc
        o.slope[c] = float(g[0] * A[c] + g[1] * A[4 + c] + g[2] * A[8 + c]);
      }
    }
  });
  // Sums over the inside points (serial in sample order: the result does not depend on
  // the thread count).
  double count = 0, sf = 0, sm = 0;
  for (int64_t q = 0; q < n; ++q) {
    if (!out[size_t(q)].inside) continue;
    count += 1;
    sf += s.fixed[index ? index[q] : q];
    sm += out[size_t(q)].moved;
  }
  if (grad_m) grad_m->fill(0);
  if (grad_t) grad_t->fill(0);
  if (count < 1) return 1.0;
  const double mf = sf / count, mm = sm / count;
  double loss = 0, P = 0, Aa = 0, B = 0;
  if (ncc) {
    for (int64_t q = 0; q < n; ++q) {
      if (!out[size_t(q)].inside) continue;
      const double a = s.fixed[index ? index[q] : q] - mf, b = out[size_t(q)].moved - mm;
      P += a * b;
      Aa += a * a;
      B += b * b;
    }
    const double D = std::sqrt(Aa * B + 1e-12);
    loss = 1 - P / D;
    if (!grad_m && !grad_t) return loss;
    // ∂L/∂moved_s = −a_s/D + P·A·b_s/D³ (the mean's share sums to zero over the points).
    std::array<double, 12> acc{};
    for (int64_t q = 0; q < n; ++q) {
      const Sample& o = out[size_t(q)];
      if (!o.inside) continue;
      const int64_t p = index ? index[q] : q;
      const double a = s.fixed[p] - mf, b = o.moved - mm;
      const double dl = -a / D + P * Aa * b / (D * D * D);
      const float* x = s.points + 3 * p;
      for (int r = 0; r < 3; ++r) {
        const double g = dl * o.slope[r];
        acc[r * 3] += g * x[0];
        acc[r * 3 + 1] += g * x[1];
        acc[r * 3 + 2] += g * x[2];
        acc[9 + r] += g;
      }
    }
    if (grad_m) std::copy(acc.begin(), acc.begin() + 9, grad_m->begin());
    if (grad_t) std::copy(acc.begin() + 9, acc.end(), grad_t->begin());
    return loss;
  }
  std::array<double, 12> acc{};
  for (int64_t q = 0; q < n; ++q) {
    const Sample& o = out[size_t(q)];
    if (!o.inside) continue;
    const int64_t p = index ? index[q] : q;
    const double diff = o.moved - s.fixed[p];
    loss += diff * diff;
    const double dl = 2 * diff / count;
    const float* x = s.points + 3 * p;
    for (int r = 0; r < 3; ++r) {
      const double g = dl * o.slope[r];
      acc[r * 3] += g * x[0];
      acc[r * 3 + 1] += g * x[1];
      acc[r * 3 + 2] += g * x[2];
      acc[9 + r] += g;
    }
  }
  if (grad_m) std::copy(acc.begin(), acc.begin() + 9, grad_m->begin());
  if (grad_t) std::copy(acc.begin() + 9, acc.end(), grad_t->begin());
  return loss / count;
}

}  // namespace autoreg::registration::detail
