// The per-voxel arithmetic every fusion path shares: JLF's weights from the patch error
// products, their normalisation, and the vote.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

namespace autoreg::segmentation::detail {

// Solves M w = 1 for a small symmetric A×A system by Gaussian elimination with partial
// pivoting (in place); false when M is singular.
inline bool solve_ones(double* m, double* w, int n) {
  for (int i = 0; i < n; ++i) w[i] = 1;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(m[r * n + c]) > std::abs(m[p * n + c])) p = r;
    }
    if (!(std::abs(m[p * n + c]) > 1e-300)) return false;
    if (p != c) {
      for (int k = 0; k < n; ++k) std::swap(m[p * n + k], m[c * n + k]);
      std::swap(w[p], w[c]);
    }
    for (int r = c + 1; r < n; ++r) {
      const double f = m[r * n + c] / m[c * n + c];
      for (int k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
      w[r] -= f * w[c];
    }
  }
  for (int c = n - 1; c >= 0; --c) {
    double s = w[c];
    for (int k = c + 1; k < n; ++k) s -= m[c * n + k] * w[k];
    w[c] = s / m[c * n + c];
  }
  return true;
}

// The winning label among the atlases' labels `l` with weights `w`: the largest summed
// weight; a tie goes to the smallest label.
inline int32_t vote(const int32_t* l, const double* w, int n) {
  int32_t best = 0;
  double best_score = -INFINITY;
  for (int a = 0; a < n; ++a) {
    bool seen = false;
    for (int b = 0; b < a && !seen; ++b) seen = l[b] == l[a];
    if (seen) continue;
    double s = 0;
    for (int b = a; b < n; ++b) s += l[b] == l[a] ? w[b] : 0;
    if (s > best_score || (s == best_score && l[a] < best)) {
      best = l[a];
      best_score = s;
    }
  }
  return best;
}

// JLF's weights (Wang et al. 2013): `m` holds, for every pair of atlases, the patch mean
// of the product of their absolute errors (symmetric n×n, overwritten); M = m^β + αI and
// w = M⁻¹1 (all ones when M is singular). Not yet normalised.
inline void jlf_weights(double* m, double* w, int n, double alpha, double beta) {
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) m[a * n + b] = std::pow(std::max(0.0, m[a * n + b]), beta);
    m[a * n + a] += alpha;
  }
  if (!solve_ones(m, w, n)) std::fill(w, w + n, 1.0);
}

// Weights scaled to sum to 1 (equal weights when they sum to about 0 or are not finite).
inline void normalise_weights(double* w, int n) {
  double sum = 0;
  for (int a = 0; a < n; ++a) sum += w[a];
  if (!(std::abs(sum) > 1e-12) || !std::isfinite(sum)) {
    std::fill(w, w + n, 1.0);
    sum = n;
  }
  for (int a = 0; a < n; ++a) w[a] /= sum;
}

}  // namespace autoreg::segmentation::detail
