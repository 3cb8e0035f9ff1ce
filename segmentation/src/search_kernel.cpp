// search.h's search_slab: plain loops over raw floats (no torch headers), compiled for
// this machine's vector units (segmentation/CMakeLists.txt), as ops' CPU kernels are.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "search.h"

namespace autoreg::segmentation::detail {
namespace {

// 1 / the number of voxels a box of radius r holds along an axis of n.
std::vector<float> inverse_counts(int64_t n, int r) {
  std::vector<float> inv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) inv[i] = 1.0f / float(std::min<int64_t>(n - 1, i + r) - std::max<int64_t>(0, i - r) + 1);
  return inv;
}

}  // namespace

void search_slab(const SearchVolumes& v, const std::vector<std::array<int, 3>>& offsets, int64_t z0, int64_t z1) {
  const int64_t d = v.d, h = v.h, w = v.w, s = v.s, r = v.r;
  const int64_t hp = h + 2 * s, wp = w + 2 * s, plane = h * w, ring = 2 * r + 1, wr = w + 2 * r;
  const std::vector<float> inv_d = inverse_counts(d, int(r)), inv_h = inverse_counts(h, int(r)),
                           inv_w = inverse_counts(w, int(r));
  std::vector<float> row(static_cast<size_t>(wr), 0.0f);  // one row's squares, r zeros each side
  std::vector<float> along_w(static_cast<size_t>(plane));
  std::vector<float> planes(static_cast<size_t>(ring * plane));  // W-and-H sums, by z mod ring
  std::vector<float> mean(static_cast<size_t>(w));
  const int64_t za = std::max<int64_t>(0, z0 - r), zb = std::min<int64_t>(d, z1 + r);
  for (size_t k = 0; k < offsets.size(); ++k) {
    const auto& o = offsets[k];
    for (int64_t zz = za; zz < z1 + r; ++zz) {
      if (zz < zb) {
        // Plane zz: squares, box sums along W, then along H into the ring.
        for (int64_t y = 0; y < h; ++y) {
          const float* tv = v.target + (zz * h + y) * w;
          const float* av = v.atlas + ((zz + s + o[0]) * hp + (y + s + o[1])) * wp + (s + o[2]);
          float* sq = row.data() + r;
          for (int64_t x = 0; x < w; ++x) {
            const float diff = tv[x] - av[x];
            sq[x] = diff * diff;
          }
          float* sw = along_w.data() + y * w;
          std::copy(row.data(), row.data() + w, sw);
          for (int64_t j = 1; j < ring; ++j) {
            const float* in = row.data() + j;
            for (int64_t x = 0; x < w; ++x) sw[x] += in[x];
          }
        }
        float* sh = planes.data() + (zz % ring) * plane;
        for (int64_t y = 0; y < h; ++y) {
          float* out = sh + y * w;
          const int64_t y0 = std::max<int64_t>(0, y - r), y1 = std::min<int64_t>(h - 1, y + r);
          std::copy(along_w.data() + y0 * w, along_w.data() + (y0 + 1) * w, out);
          for (int64_t yy = y0 + 1; yy <= y1; ++yy) {
            const float* in = along_w.data() + yy * w;
            for (int64_t x = 0; x < w; ++x) out[x] += in[x];
          }
        }
      }
      // Plane z = zz − r has its whole box along D: its means against the best.
      const int64_t z = zz - r;
      if (z < z0 || z >= z1) continue;
      const int64_t k0 = std::max<int64_t>(0, z - r), k1 = std::min<int64_t>(d - 1, z + r);
      for (int64_t y = 0; y < h; ++y) {
        const float* first = planes.data() + (k0 % ring) * plane + y * w;
        std::copy(first, first + w, mean.begin());
        for (int64_t kk = k0 + 1; kk <= k1; ++kk) {
          const float* in = planes.data() + (kk % ring) * plane + y * w;
          for (int64_t x = 0; x < w; ++x) mean[x] += in[x];
        }
        const float scale = inv_d[z] * inv_h[y];
        float* best = v.best + z * plane + y * w;
        int16_t* chosen = v.chosen + z * plane + y * w;
        for (int64_t x = 0; x < w; ++x) {
          const float msd = mean[x] * (scale * inv_w[x]);
          if (msd < best[x]) {  // nearest first: moving away needs a strict gain
            best[x] = msd;
            chosen[x] = int16_t(k);
          }
        }
      }
    }
  }
}

}  // namespace autoreg::segmentation::detail
