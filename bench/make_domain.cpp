// autoreg_make_domain KIND IN OUT [SEED]: a T1 volume as another scanner or protocol
// would give it, on the input's own grid (so its label map still fits), for the
// adaptation study (bench/adapt_study.py, docs/adaptation.md).
//
//   clinical  thick axial slices (5 mm: each slab of the slice axis, the voxel axis
//             closest to superior-inferior, averaged, then linearly interpolated back
//             onto the grid), a smooth multiplicative bias field (exp of a random field
//             on a 4×4×4 lattice, ±0.35), Rician noise (σ = 4 % of the 99th percentile)
//   t2like    a non-monotonic map of the T1 intensity t (scaled by its 99th
//             percentile): f(t) = exp(−((t − 0.3) / 0.18)²) + 0.25 exp(−((t − 0.6) /
//             0.12)²) — CSF (dark in T1) bright, grey matter mid, white matter (bright
//             in T1) dark, as in a T2; air kept dark (the map fades in over t < 0.05);
//             computed from intensities alone, not from labels
//
// Deterministic for a seed. Not a test or a benchmark: a data maker for the study.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <string>

#include "autoreg/io/volume.h"

namespace {

using autoreg::io::Volume;

double percentile(const at::Tensor& t, double q) {
  const at::Tensor v = std::get<0>(t.flatten().sort());
  return v[int64_t(q * double(v.numel() - 1))].item<double>();
}

// The tensor dimension (2, 3, 4 = k, j, i) of the voxel axis nearest superior-inferior.
int64_t slice_dim(const autoreg::io::Geometry& g) {
  int best = 0;
  for (int c = 1; c < 3; ++c) {
    if (std::abs(g.direction[6 + c]) > std::abs(g.direction[6 + best])) best = c;
  }
  return 4 - best;
}

at::Tensor clinical(const Volume& v) {
  const at::Tensor x = v.data.to(at::kFloat);
  const int64_t dim = slice_dim(v.geometry);
  const double spacing = v.geometry.spacing[4 - dim];
  const int64_t slab = std::max<int64_t>(1, int64_t(std::lround(5.0 / spacing)));
  const int64_t n = x.size(dim);
  // Slabs averaged (the last one partial), then linear interpolation between slab
  // centres back onto the grid.
  const int64_t slabs = (n + slab - 1) / slab;
  std::vector<at::Tensor> means;
  for (int64_t s = 0; s < slabs; ++s) means.push_back(x.narrow(dim, s * slab, std::min(slab, n - s * slab)).mean(dim, true));
  const at::Tensor thick = at::cat(means, dim);
  std::vector<at::Tensor> planes;
  for (int64_t i = 0; i < n; ++i) {
    const double c = (double(i) + 0.5) / double(slab) - 0.5;  // position in slab units
    const int64_t a = std::clamp<int64_t>(int64_t(std::floor(c)), 0, slabs - 1), b = std::min(a + 1, slabs - 1);
    const double w = std::clamp(c - double(a), 0.0, 1.0);
    planes.push_back(thick.narrow(dim, a, 1) * (1 - w) + thick.narrow(dim, b, 1) * w);
  }
  at::Tensor y = at::cat(planes, dim);
  const at::Tensor coarse = (at::rand({1, 1, 4, 4, 4}) * 2 - 1) * 0.35;
  const at::Tensor bias = at::upsample_trilinear3d(coarse, {x.size(2), x.size(3), x.size(4)}, true).exp();
  y = y * bias;
  const double sigma = 0.04 * percentile(y, 0.99);
  return ((y + sigma * at::randn_like(y)).pow(2) + (sigma * at::randn_like(y)).pow(2)).sqrt();
}

at::Tensor t2like(const Volume& v) {
  const at::Tensor x = v.data.to(at::kFloat);
  const at::Tensor t = x / percentile(x, 0.99);
  const at::Tensor f = at::exp(-((t - 0.3) / 0.18).pow(2)) + 0.25 * at::exp(-((t - 0.6) / 0.12).pow(2));
  // Air stays dark: the map fades in over the lowest 5 % of the range.
  return f * (t / 0.05).clamp(0, 1) * 1000;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: autoreg_make_domain clinical|t2like IN OUT [SEED]\n");
    return 1;
  }
  const std::string kind = argv[1];
  if (kind != "clinical" && kind != "t2like") {
    std::fprintf(stderr, "autoreg_make_domain: unknown kind '%s' (clinical or t2like)\n", kind.c_str());
    return 1;
  }
  try {
    at::manual_seed(argc == 5 ? std::strtoull(argv[4], nullptr, 10) : 0);
    Volume v = autoreg::io::read_volume(argv[2]);
    v.data = kind == "clinical" ? clinical(v) : t2like(v);
    autoreg::io::write_volume(argv[3], v);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autoreg_make_domain: %s\n", e.what());
    return 2;
  }
  return 0;
}
