#include "affine_kernel.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace autoreg::registration::detail {
namespace {

// Trilinear value and gradient (in voxel index units) of the moving image at index x,
// which lies in [0, n − 1] along every axis; as grid_sampler with zero padding, a
// neighbour past the last voxel (x = n − 1 exactly) reads 0.
inline float trilinear(const AffineSamples& s, const float x[3], float g[3]) {
  const int64_t w = s.size[0], h = s.size[1];
  int64_t lo[3];
  bool has_hi[3];
  float f[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::min<int64_t>(int64_t(x[a]), s.size[a] - 1);  // x >= 0: truncation is floor
    has_hi[a] = lo[a] + 1 < s.size[a];
    f[a] = x[a] - float(lo[a]);
  }
  const float* base = s.moving + (lo[2] * h + lo[1]) * w + lo[0];
  float c[2][2][2];  // [k][j][i] offsets
  if (has_hi[0] && has_hi[1] && has_hi[2]) {  // inside: no checks
    for (int dk = 0; dk < 2; ++dk)
      for (int dj = 0; dj < 2; ++dj) {
        const float* row = base + (dk * h + dj) * w;
        c[dk][dj][0] = row[0];
        c[dk][dj][1] = row[1];
      }
  } else {
    for (int dk = 0; dk < 2; ++dk)
      for (int dj = 0; dj < 2; ++dj)
        for (int di = 0; di < 2; ++di) {
          const bool ok = (!di || has_hi[0]) && (!dj || has_hi[1]) && (!dk || has_hi[2]);
          c[dk][dj][di] = ok ? base[(dk * h + dj) * w + di] : 0.0f;
        }
  }
  // Along i first, then j, then k; the gradient from the same partial interpolants.
  float cj[2][2], di_[2][2];
  for (int dk = 0; dk < 2; ++dk)
    for (int dj = 0; dj < 2; ++dj) {
      di_[dk][dj] = c[dk][dj][1] - c[dk][dj][0];
      cj[dk][dj] = c[dk][dj][0] + f[0] * di_[dk][dj];
    }
  const float ck0 = cj[0][0] + f[1] * (cj[0][1] - cj[0][0]), ck1 = cj[1][0] + f[1] * (cj[1][1] - cj[1][0]);
  const float gi0 = di_[0][0] + f[1] * (di_[0][1] - di_[0][0]), gi1 = di_[1][0] + f[1] * (di_[1][1] - di_[1][0]);
  g[0] = gi0 + f[2] * (gi1 - gi0);
  const float gj0 = cj[0][1] - cj[0][0], gj1 = cj[1][1] - cj[1][0];
  g[1] = gj0 + f[2] * (gj1 - gj0);
  g[2] = ck1 - ck0;
  return ck0 + f[2] * g[2];
}

// Sums over a chunk of sampled points (fixed-size chunks, added in order: the result
// does not depend on the number of threads).
struct Moments {
  double count = 0, f = 0, m = 0, ff = 0, mm = 0, fm = 0;
};

constexpr int64_t kChunk = 4096;

}  // namespace

double affine_loss(const AffineSamples& s, const std::array<double, 9>& m, const std::array<double, 3>& t,
                   const int64_t* index, int64_t samples, bool ncc, std::array<double, 9>* grad_m,
                   std::array<double, 3>* grad_t) {
  const int64_t n = index ? samples : s.count;
  const bool want_grad = grad_m || grad_t;
  if (grad_m) grad_m->fill(0);
  if (grad_t) grad_t->fill(0);
  if (n <= 0) return 1.0;
  // The world → index map folded into the affine: index = B·x + c, B = A·m, c = A·t + a.
  const auto& A = s.to_index;
  float B[9], c[3], A3[9];
  for (int r = 0; r < 3; ++r) {
    double cr = A[r * 4 + 3];
    for (int k = 0; k < 3; ++k) {
      double v = 0;
      for (int q = 0; q < 3; ++q) v += A[r * 4 + q] * m[q * 3 + k];
      B[r * 3 + k] = float(v);
      cr += A[r * 4 + k] * t[k];
      A3[r * 3 + k] = float(A[r * 4 + k]);
    }
    c[r] = float(cr);
  }
  const float limit[3] = {float(s.size[0] - 1), float(s.size[1] - 1), float(s.size[2] - 1)};
  // Pass 1: moving intensities (and, for the gradient, their slopes with respect to the
  // world point y) at the points, and the chunks' sums.
  std::vector<float> moved(size_t(n), 0.0f), slope(want_grad ? size_t(3 * n) : 0, 0.0f);
  std::vector<uint8_t> inside(size_t(n), 0);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Moments> sums(static_cast<size_t>(chunks));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t ch = begin; ch < end; ++ch) {
      Moments acc;
      for (int64_t q = ch * kChunk; q < std::min(n, (ch + 1) * kChunk); ++q) {
        const int64_t p = index ? index[q] : q;
        const float* x = s.points + 3 * p;
        float v[3];
        bool in = true;
        for (int r = 0; r < 3; ++r) {
          v[r] = B[r * 3] * x[0] + B[r * 3 + 1] * x[1] + B[r * 3 + 2] * x[2] + c[r];
          in = in && v[r] >= 0 && v[r] <= limit[r];  // false for NaN
        }
        if (!in) continue;
        float g[3];
        const float value = trilinear(s, v, g);
        inside[size_t(q)] = 1;
        moved[size_t(q)] = value;
        if (want_grad) {
          for (int k = 0; k < 3; ++k) {  // chain through index = A·y: slope_k = Σ_r g_r A_rk
            slope[size_t(3 * q + k)] = g[0] * A3[k] + g[1] * A3[3 + k] + g[2] * A3[6 + k];
          }
        }
        const double fv = s.fixed[p];
        acc.count += 1;
        acc.f += fv;
        acc.m += value;
        acc.ff += fv * fv;
        acc.mm += double(value) * value;
        acc.fm += fv * value;
      }
      sums[size_t(ch)] = acc;
    }
  });
  Moments total;
  for (const Moments& c2 : sums) {
    total.count += c2.count;
    total.f += c2.f;
    total.m += c2.m;
    total.ff += c2.ff;
    total.mm += c2.mm;
    total.fm += c2.fm;
  }
  if (total.count < 1) return 1.0;
  const double count = total.count, mf = total.f / count, mm = total.m / count;
  double loss, a_coef = 0, b_coef = 0, constant = 0;
  // ∂L/∂moved_s = a_coef·f_s + b_coef·m_s + constant for the points inside.
  if (ncc) {
    const double P = total.fm - count * mf * mm;
    const double Aa = std::max(0.0, total.ff - count * mf * mf);
    const double Bb = std::max(0.0, total.mm - count * mm * mm);
    const double D = std::sqrt(Aa * Bb + 1e-12);
    loss = 1 - P / D;
    // −a_s/D + P·A·b_s/D³ with a_s = f_s − mf, b_s = m_s − mm (the mean's share sums to
    // zero over the points).
    a_coef = -1 / D;
    b_coef = P * Aa / (D * D * D);
    constant = mf / D - b_coef * mm;
  } else {
    loss = (total.ff - 2 * total.fm + total.mm) / count;
    a_coef = -2 / count;
    b_coef = 2 / count;
  }
  if (!want_grad) return loss;
  // Pass 2: the gradient, Σ_s ∂L/∂moved_s · slope_s ⊗ (x_s, 1).
  std::vector<std::array<double, 12>> partial(static_cast<size_t>(chunks));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t ch = begin; ch < end; ++ch) {
      std::array<double, 12> acc{};
      for (int64_t q = ch * kChunk; q < std::min(n, (ch + 1) * kChunk); ++q) {
        if (!inside[size_t(q)]) continue;
        const int64_t p = index ? index[q] : q;
        const double dl = a_coef * s.fixed[p] + b_coef * moved[size_t(q)] + constant;
        const float* x = s.points + 3 * p;
        for (int r = 0; r < 3; ++r) {
          const double g = dl * slope[size_t(3 * q + r)];
          acc[r * 3] += g * x[0];
          acc[r * 3 + 1] += g * x[1];
          acc[r * 3 + 2] += g * x[2];
          acc[9 + r] += g;
        }
      }
      partial[size_t(ch)] = acc;
    }
  });
  std::array<double, 12> acc{};
  for (const auto& p : partial)
    for (int i = 0; i < 12; ++i) acc[i] += p[i];
  if (grad_m) std::copy(acc.begin(), acc.begin() + 9, grad_m->begin());
  if (grad_t) std::copy(acc.begin() + 9, acc.end(), grad_t->begin());
  return loss;
}

}  // namespace autoreg::registration::detail
