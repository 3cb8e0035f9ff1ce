// search.h's raw loops (no torch headers), compiled for this machine's vector units
// (segmentation/CMakeLists.txt), as ops' CPU kernels are.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "search_kernel.h"

namespace autoreg::segmentation::detail {
namespace {

// 1 / the number of voxels a box of radius r holds along an axis of n.
std::vector<float> inverse_counts(int64_t n, int r) {
  std::vector<float> inv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) inv[i] = 1.0f / float(std::min<int64_t>(n - 1, i + r) - std::max<int64_t>(0, i - r) + 1);
  return inv;
}

// dst[x] = src[0][x] + src[1][x] + … + src[m−1][x] for x in [x0, x1), added in that
// order (so any m gives what successive passes gave), in registers.
template <int M>
void sum_rows_of(const float* const* src, float* dst, int64_t x0, int64_t x1) {
  const float* s[M];
  for (int j = 0; j < M; ++j) s[j] = src[j];
#pragma omp simd
  for (int64_t x = x0; x < x1; ++x) {
    float acc = s[0][x];
    for (int j = 1; j < M; ++j) acc += s[j][x];
    dst[x] = acc;
  }
}

void sum_rows(const float* const* src, int m, float* dst, int64_t x0, int64_t x1) {
  switch (m) {
    case 1: return sum_rows_of<1>(src, dst, x0, x1);
    case 2: return sum_rows_of<2>(src, dst, x0, x1);
    case 3: return sum_rows_of<3>(src, dst, x0, x1);
    case 4: return sum_rows_of<4>(src, dst, x0, x1);
    case 5: return sum_rows_of<5>(src, dst, x0, x1);
    case 6: return sum_rows_of<6>(src, dst, x0, x1);
    case 7: return sum_rows_of<7>(src, dst, x0, x1);
    default: break;
  }
  std::copy(src[0] + x0, src[0] + x1, dst + x0);
  for (int j = 1; j < m; ++j) {
    for (int64_t x = x0; x < x1; ++x) dst[x] += src[j][x];
  }
}

// Calls f(x0, x1) for every run of consecutive set flags among `tiles` flags, as voxel
// ranges [x0, x1) of a row of w voxels.
template <typename F>
void for_runs(const uint8_t* flags, int64_t tiles, int64_t w, F&& f) {
  for (int64_t t = 0; t < tiles;) {
    if (!flags[t]) {
      ++t;
      continue;
    }
    const int64_t t0 = t;
    while (t < tiles && flags[t]) ++t;
    f(t0 * kSearchTile, std::min(w, t * kSearchTile));
  }
}

// out[i] = max over in[i + j·stride], |j| ≤ radius, within [0, n) along the axis.
void dilate_axis(const uint8_t* in, uint8_t* out, int64_t lines, int64_t n, int64_t stride, int64_t line_stride,
                 int64_t inner, int radius) {
  for (int64_t l = 0; l < lines; ++l) {
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* o = out + l * line_stride + i * stride;
      const int64_t j0 = std::max<int64_t>(0, i - radius), j1 = std::min<int64_t>(n - 1, i + radius);
      std::copy(in + l * line_stride + j0 * stride, in + l * line_stride + j0 * stride + inner, o);
      for (int64_t j = j0 + 1; j <= j1; ++j) {
        const uint8_t* src = in + l * line_stride + j * stride;
        for (int64_t k = 0; k < inner; ++k) o[k] |= src[k];
      }
    }
  }
}

}  // namespace

void label_changes(const std::vector<LabelView>& labels, int64_t d, int64_t h, int64_t w, int64_t z0, int64_t z1,
                   uint8_t* changes) {
  for (int64_t z = z0; z < z1; ++z) {
    for (int64_t y = 0; y < h; ++y) {
      uint8_t* c = changes + (z * h + y) * w;
      std::fill(c, c + w, uint8_t(0));
      const int32_t* first = labels[0].data + z * labels[0].plane_stride + y * labels[0].row_stride;
      for (const LabelView& v : labels) {
        const int32_t* l = v.data + z * v.plane_stride + y * v.row_stride;
        for (int64_t x = 0; x < w; ++x) c[x] |= uint8_t(l[x] != first[x]);
        for (int64_t x = 0; x + 1 < w; ++x) c[x] |= uint8_t(l[x] != l[x + 1]);
        if (y + 1 < h) {
          const int64_t next = v.row_stride;
          for (int64_t x = 0; x < w; ++x) c[x] |= uint8_t(l[x] != l[x + next]);
        }
        if (z + 1 < d) {
          const int64_t next = v.plane_stride;
          for (int64_t x = 0; x < w; ++x) c[x] |= uint8_t(l[x] != l[x + next]);
        }
      }
    }
  }
}

void dilate(uint8_t* mask, int64_t d, int64_t h, int64_t w, int radius) {
  if (radius <= 0) return;
  std::vector<uint8_t> tmp(static_cast<size_t>(d * h * w));
  // Along W: each row's voxels one by one; along H and D: whole rows and planes at once.
  dilate_axis(mask, tmp.data(), d * h, w, 1, w, 1, radius);
  dilate_axis(tmp.data(), mask, d, h, w, h * w, w, radius);
  dilate_axis(mask, tmp.data(), 1, d, h * w, 0, h * w, radius);
  std::copy(tmp.begin(), tmp.end(), mask);
}

void search_chunk(const SearchVolumes& v, const std::vector<std::array<int, 3>>& offsets, int64_t z0, int64_t z1,
                  int64_t y0, int64_t y1) {
  const int64_t d = v.d, h = v.h, w = v.w, s = v.s, r = v.r;
  const int64_t hp = h + 2 * s, wp = w + 2 * s, plane = h * w, ring = 2 * r + 1, wr = w + 2 * r;
  const int64_t tiles = (w + kSearchTile - 1) / kSearchTile, rows = y1 - y0;
  // Planes whose H sums (and rows whose W sums) the chunk's boxes reach.
  const int64_t za = std::max<int64_t>(0, z0 - r), zb = std::min<int64_t>(d, z1 + r);
  const int64_t ya = std::max<int64_t>(0, y0 - r), yb = std::min<int64_t>(h, y1 + r), wrows = yb - ya;
  // Which tiles of which rows to compute: the boxes of the voxels to search (`out`), their
  // H sums on the planes their boxes reach (`hsum`), those sums' W sums (`wsum`).
  std::vector<uint8_t> out(static_cast<size_t>((z1 - z0) * rows * tiles), 1);
  if (v.need) {
    bool any = false;
    for (int64_t z = z0; z < z1; ++z) {
      for (int64_t y = y0; y < y1; ++y) {
        const uint8_t* n = v.need + z * plane + y * w;
        uint8_t* f = out.data() + ((z - z0) * rows + (y - y0)) * tiles;
        for (int64_t t = 0; t < tiles; ++t) {
          uint8_t set = 0;
          for (int64_t x = t * kSearchTile; x < std::min(w, (t + 1) * kSearchTile); ++x) set |= n[x];
          f[t] = set;
          any = any || set;
        }
      }
    }
    if (!any) return;
  }
  std::vector<uint8_t> hsum(static_cast<size_t>((zb - za) * rows * tiles), 0);
  for (int64_t zz = za; zz < zb; ++zz) {
    for (int64_t z = std::max(z0, zz - r); z <= std::min(z1 - 1, zz + r); ++z) {
      for (int64_t i = 0; i < rows * tiles; ++i) hsum[(zz - za) * rows * tiles + i] |= out[(z - z0) * rows * tiles + i];
    }
  }
  std::vector<uint8_t> wsum(static_cast<size_t>((zb - za) * wrows * tiles), 0);
  for (int64_t zz = za; zz < zb; ++zz) {
    for (int64_t yy = ya; yy < yb; ++yy) {
      uint8_t* f = wsum.data() + ((zz - za) * wrows + (yy - ya)) * tiles;
      for (int64_t y = std::max(y0, yy - r); y <= std::min(y1 - 1, yy + r); ++y) {
        const uint8_t* g = hsum.data() + ((zz - za) * rows + (y - y0)) * tiles;
        for (int64_t t = 0; t < tiles; ++t) f[t] |= g[t];
      }
    }
  }

  const std::vector<float> inv_d = inverse_counts(d, int(r)), inv_h = inverse_counts(h, int(r)),
                           inv_w = inverse_counts(w, int(r));
  std::vector<float> row(static_cast<size_t>(wr), 0.0f);  // one row's squares, r zeros each side
  std::vector<float> along_w(static_cast<size_t>(wrows * w));
  std::vector<float> planes(static_cast<size_t>(ring * rows * w));  // W-and-H sums, by z mod ring
  std::vector<float> mean(static_cast<size_t>(w));
  std::vector<const float*> shifted(static_cast<size_t>(ring)), src(static_cast<size_t>(ring));
  for (int64_t j = 0; j < ring; ++j) shifted[j] = row.data() + j;  // row x's box starts at x
  for (size_t k = 0; k < offsets.size(); ++k) {
    const auto& o = offsets[k];
    for (int64_t zz = za; zz < z1 + r; ++zz) {
      if (zz < zb) {
        // Plane zz: squares, box sums along W, then along H into the ring.
        for (int64_t yy = ya; yy < yb; ++yy) {
          const float* tv = v.target + (zz * h + yy) * w;
          const float* av = v.atlas + ((zz + s + o[0]) * hp + (yy + s + o[1])) * wp + (s + o[2]);
          float* sq = row.data() + r;
          float* sw = along_w.data() + (yy - ya) * w;
          for_runs(wsum.data() + ((zz - za) * wrows + (yy - ya)) * tiles, tiles, w, [&](int64_t x0, int64_t x1) {
            const int64_t xa = std::max<int64_t>(0, x0 - r), xb = std::min(w, x1 + r);
            for (int64_t x = xa; x < xb; ++x) {
              const float diff = tv[x] - av[x];
              sq[x] = diff * diff;
            }
            sum_rows(shifted.data(), int(ring), sw, x0, x1);
          });
        }
        float* sh = planes.data() + (zz % ring) * rows * w;
        for (int64_t y = y0; y < y1; ++y) {
          float* dst = sh + (y - y0) * w;
          const int64_t k0 = std::max<int64_t>(0, y - r), k1 = std::min<int64_t>(h - 1, y + r);
          for (int64_t yy = k0; yy <= k1; ++yy) src[yy - k0] = along_w.data() + (yy - ya) * w;
          for_runs(hsum.data() + ((zz - za) * rows + (y - y0)) * tiles, tiles, w,
                   [&](int64_t x0, int64_t x1) { sum_rows(src.data(), int(k1 - k0 + 1), dst, x0, x1); });
        }
      }
      // Plane z = zz − r has its whole box along D: its means against the best.
      const int64_t z = zz - r;
      if (z < z0 || z >= z1) continue;
      const int64_t k0 = std::max<int64_t>(0, z - r), k1 = std::min<int64_t>(d - 1, z + r);
      for (int64_t y = y0; y < y1; ++y) {
        const float scale = inv_d[z] * inv_h[y];
        float* best = v.best + z * plane + y * w;
        int16_t* chosen = v.chosen + z * plane + y * w;
        for (int64_t kk = k0; kk <= k1; ++kk) src[kk - k0] = planes.data() + ((kk % ring) * rows + (y - y0)) * w;
        for_runs(out.data() + ((z - z0) * rows + (y - y0)) * tiles, tiles, w, [&](int64_t x0, int64_t x1) {
          sum_rows(src.data(), int(k1 - k0 + 1), mean.data(), x0, x1);
          // Nearest first: moving away needs a strict gain. (Selects, not branches: they
          // vectorise.)
          const int16_t index = int16_t(k);
          for (int64_t x = x0; x < x1; ++x) {
            const float msd = mean[x] * (scale * inv_w[x]);
            const bool better = msd < best[x];
            best[x] = better ? msd : best[x];
            chosen[x] = better ? index : chosen[x];
          }
        });
      }
    }
  }
}

}  // namespace autoreg::segmentation::detail
