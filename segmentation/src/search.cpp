#include "search.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "local_stats.h"
#include "voting.h"

namespace autoreg::segmentation::detail {

std::vector<std::array<int, 3>> search_offsets(int s) {
  std::vector<std::array<int, 3>> offsets;
  for (int z = -s; z <= s; ++z)
    for (int y = -s; y <= s; ++y)
      for (int x = -s; x <= s; ++x) offsets.push_back({z, y, x});
  std::stable_sort(offsets.begin(), offsets.end(), [](const auto& a, const auto& b) {
    return a[0] * a[0] + a[1] * a[1] + a[2] * a[2] < b[0] * b[0] + b[1] * b[1] + b[2] * b[2];
  });
  return offsets;
}

namespace {

// Where offset k (search_offsets' order) moves a read in volumes padded by s, whose
// planes are hp × wp: added to a voxel's index at offset (−s, −s, −s).
std::vector<int64_t> padded_steps(int s, int64_t hp, int64_t wp) {
  const auto offsets = search_offsets(s);
  std::vector<int64_t> step(offsets.size());
  for (size_t k = 0; k < offsets.size(); ++k) {
    step[k] = (offsets[k][0] + s) * hp * wp + (offsets[k][1] + s) * wp + (offsets[k][2] + s);
  }
  return step;
}

}  // namespace

Searched search(const at::Tensor& target_in, const at::Tensor& atlas_in, const at::Tensor& labels_in, int s, int r,
                const at::Tensor& need_in) {
  const at::Tensor target = target_in.to(at::kFloat).contiguous();
  const int64_t d = target.size(0), h = target.size(1), w = target.size(2);
  // Faces repeated s voxels outward: every shifted read is in bounds.
  const auto pad = [s](const at::Tensor& x) {
    return at::replication_pad3d(x.to(at::kFloat).unsqueeze(0).unsqueeze(0), {s, s, s, s, s, s})[0][0].contiguous();
  };
  Searched out;
  out.image = pad(atlas_in);
  out.labels = pad(labels_in).round_().to(at::kInt).contiguous();  // exact below 2^24
  out.msd = at::full({d, h, w}, INFINITY, at::kFloat);
  out.chosen = at::zeros({d, h, w}, at::kShort);
  if (need_in.defined() && !need_in.sizes().equals(target.sizes())) {
    throw std::invalid_argument("search: the mask of voxels to search is not on the target's grid");
  }
  const at::Tensor need = need_in.defined() ? need_in.to(at::kByte).contiguous() : at::Tensor();
  SearchVolumes v;
  v.target = target.data_ptr<float>();
  v.atlas = out.image.data_ptr<float>();
  v.best = out.msd.data_ptr<float>();
  v.chosen = out.chosen.data_ptr<int16_t>();
  v.need = need.defined() ? need.data_ptr<uint8_t>() : nullptr;
  v.d = d;
  v.h = h;
  v.w = w;
  v.s = s;
  v.r = r;
  const std::vector<std::array<int, 3>> offsets = search_offsets(s);
  // Chunks of rows whose ring of 2r+1 planes stays near 256 KB (a core's cache), and of
  // planes, a few per thread, taken in turn as threads come free (how much a chunk has
  // to search varies); each recomputes the 2r planes and rows its boxes share with its
  // neighbours'.
  const int64_t threads = at::get_num_threads();
  const int64_t chunk_rows = std::max<int64_t>(8, (int64_t(256) << 10) / ((2 * int64_t(r) + 1) * w * 4));
  const int64_t ny = (h + chunk_rows - 1) / chunk_rows;
  const int64_t nz = std::min<int64_t>(d, std::max<int64_t>(1, (6 * threads + ny - 1) / ny));
  std::atomic<int64_t> next{0};
  at::parallel_for(0, threads, 1, [&](int64_t, int64_t) {
    for (int64_t c = next++; c < nz * ny; c = next++) {
      const int64_t iz = c / ny, iy = c % ny;
      search_chunk(v, offsets, iz * d / nz, (iz + 1) * d / nz, iy * h / ny, (iy + 1) * h / ny);
    }
  });
  return out;
}

at::Tensor undecided(const std::vector<at::Tensor>& labels, int s) {
  // The maps as they are where they are int32 with rows contiguous (a crop of a whole
  // map is): no copies of the atlases' labels.
  std::vector<at::Tensor> held;
  std::vector<LabelView> views;
  for (const auto& l : labels) {
    held.push_back(l.scalar_type() == at::kInt && l.stride(2) == 1 ? l : l.to(at::kInt).contiguous());
    views.push_back({held.back().data_ptr<int32_t>(), held.back().stride(0), held.back().stride(1)});
  }
  const int64_t d = held[0].size(0), h = held[0].size(1), w = held[0].size(2);
  at::Tensor mask = at::empty({d, h, w}, at::kByte);
  uint8_t* m = mask.data_ptr<uint8_t>();
  at::parallel_for(0, d, 1, [&](int64_t z0, int64_t z1) { label_changes(views, d, h, w, z0, z1, m); });
  dilate(m, d, h, w, s);
  return mask;
}

at::Tensor dilated(const at::Tensor& mask, int radius) {
  at::Tensor out = mask.contiguous().to(at::kByte, /*non_blocking=*/false, /*copy=*/true);  // one copy
  dilate(out.data_ptr<uint8_t>(), out.size(0), out.size(1), out.size(2), radius);
  return out;
}

Fused fuse_searched(const at::Tensor& target_in, const std::vector<Searched>& atlases, const Options& o) {
  const at::Tensor target = target_in.to(at::kFloat).contiguous();
  const int n = int(atlases.size());
  const int s = o.search_radius, r = o.patch_radius;
  const int64_t d = target.size(0), h = target.size(1), w = target.size(2), total = d * h * w;
  const int64_t hp = h + 2 * s, wp = w + 2 * s;
  const std::vector<int64_t> step = padded_steps(s, hp, wp);
  std::vector<const int16_t*> chosen;
  std::vector<const float*> msd, image;
  std::vector<const int32_t*> labels;
  for (const auto& a : atlases) {
    chosen.push_back(a.chosen.data_ptr<int16_t>());
    msd.push_back(a.msd.defined() ? a.msd.data_ptr<float>() : nullptr);
    if (o.method == Method::Weighted && !msd.back()) {
      throw std::invalid_argument("fuse_searched: the weighted vote needs every atlas's patch errors (msd)");
    }
    image.push_back(a.image.data_ptr<float>());
    labels.push_back(a.labels.data_ptr<int32_t>());
  }
  Fused out;
  out.labels = at::empty({d, h, w}, at::kInt);
  for (int a = 0; a < n; ++a) out.searched_labels.push_back(at::empty({d, h, w}, at::kInt));
  if (o.keep_weights) out.weights = at::empty({n, d, h, w}, at::kFloat);
  int32_t* labels_out = out.labels.data_ptr<int32_t>();
  std::vector<int32_t*> read_out;
  for (auto& l : out.searched_labels) read_out.push_back(l.data_ptr<int32_t>());
  float* weights_out = o.keep_weights ? out.weights.data_ptr<float>() : nullptr;
  const float* t = target.data_ptr<float>();
  std::atomic<int64_t> unanimous{0};
  at::parallel_for(0, d, 1, [&](int64_t z0, int64_t z1) {
    const int side = 2 * r + 1;
    std::vector<int32_t> l(static_cast<size_t>(n));
    std::vector<int64_t> shift(static_cast<size_t>(n));
    std::vector<double> wt(static_cast<size_t>(n)), m(static_cast<size_t>(n) * n);
    std::vector<float> err(static_cast<size_t>(n) * side * side * side);  // patch position × atlas
    std::vector<double> pair_sum(static_cast<size_t>(n) * (n + 1) / 2);
    int64_t agreed = 0;
    for (int64_t z = z0; z < z1; ++z) {
      for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
          const int64_t i = (z * h + y) * w + x;
          const int64_t padded = (z * hp + y) * wp + x;  // x's read at offset (−s, −s, −s)
          bool same = true;
          for (int a = 0; a < n; ++a) {
            shift[a] = step[chosen[a][i]];
            l[a] = labels[a][padded + shift[a]];
            read_out[a][i] = l[a];
            same = same && l[a] == l[0];
          }
          if (same) {
            labels_out[i] = l[0];
            ++agreed;
            if (weights_out) {
              for (int a = 0; a < n; ++a) weights_out[a * total + i] = 1.0f / float(n);
            }
            continue;
          }
          if (o.method == Method::Weighted) {
            for (int a = 0; a < n; ++a) wt[a] = std::pow(double(msd[a][i]) + 1e-3, -o.power);
          } else {
            // Each atlas's absolute errors over x's patch, read at x's own offset.
            int count = 0;
            for (int64_t zz = std::max<int64_t>(0, z - r); zz <= std::min<int64_t>(d - 1, z + r); ++zz) {
              for (int64_t yy = std::max<int64_t>(0, y - r); yy <= std::min<int64_t>(h - 1, y + r); ++yy) {
                for (int64_t xx = std::max<int64_t>(0, x - r); xx <= std::min<int64_t>(w - 1, x + r); ++xx) {
                  const float tv = t[(zz * h + yy) * w + xx];
                  const int64_t p = (zz * hp + yy) * wp + xx;
                  for (int a = 0; a < n; ++a) err[size_t(count) * n + a] = std::abs(tv - image[a][p + shift[a]]);
                  ++count;
                }
              }
            }
            // Every pair's sum over the patch in the patch's order, the pairs side by side
            // (independent additions, which overlap).
            std::fill(pair_sum.begin(), pair_sum.end(), 0.0);
            for (int k = 0; k < count; ++k) {
              const float* e = err.data() + size_t(k) * n;
              double* sum = pair_sum.data();
              for (int a = 0; a < n; ++a) {
                for (int b = a; b < n; ++b) *sum++ += double(e[a]) * e[b];
              }
            }
            for (int a = 0, q = 0; a < n; ++a) {
              for (int b = a; b < n; ++b, ++q) m[a * n + b] = m[b * n + a] = pair_sum[q] / count;
            }
            jlf_weights(m.data(), wt.data(), n, o.alpha, o.beta);
          }
          normalise_weights(wt.data(), n);
          labels_out[i] = vote(l.data(), wt.data(), n);
          if (weights_out) {
            for (int a = 0; a < n; ++a) weights_out[a * total + i] = float(wt[a]);
          }
        }
      }
    }
    unanimous += agreed;
  });
  out.unanimous = unanimous;
  return out;
}

void vote_searched_patches(Fused& fused, const std::vector<Searched>& atlases, const Options& o,
                           const at::Tensor& undecided) {
  const int n = int(atlases.size());
  const int s = o.search_radius, r = o.patch_radius;
  const int64_t d = fused.labels.size(0), h = fused.labels.size(1), w = fused.labels.size(2), total = d * h * w;
  const int64_t hp = h + 2 * s, wp = w + 2 * s;
  const std::vector<int64_t> step = padded_steps(s, hp, wp);
  // Only voxels near a disagreement can change: those within r of one (and, given
  // `undecided`, only where it marks).
  at::Tensor differ = at::zeros({d, h, w}, at::kBool);
  for (int a = 1; a < n; ++a) differ.logical_or_(fused.searched_labels[a].ne(fused.searched_labels[0]));
  at::Tensor todo_mask = dilated(differ, r);
  if (undecided.defined()) {
    if (!undecided.sizes().equals(todo_mask.sizes())) {
      throw std::invalid_argument("vote_searched_patches: the undecided mask is not on the labels' grid");
    }
    todo_mask.mul_(undecided.to(at::kByte));
  }
  const uint8_t* todo = todo_mask.data_ptr<uint8_t>();
  std::vector<const int16_t*> chosen;
  std::vector<const int32_t*> labels;
  for (const auto& a : atlases) {
    chosen.push_back(a.chosen.data_ptr<int16_t>());
    labels.push_back(a.labels.data_ptr<int32_t>());
  }
  const float* weights = fused.weights.data_ptr<float>();
  int32_t* out = fused.labels.data_ptr<int32_t>();
  at::parallel_for(0, d, 1, [&](int64_t z0, int64_t z1) {
    // At most one candidate per vote; the last one matched is tried first (neighbouring
    // votes are mostly for the same label). Each candidate's votes summed in the order
    // they come (weights can span any range, so another order could round otherwise).
    const size_t most = size_t(n) * size_t(2 * r + 1) * size_t(2 * r + 1) * size_t(2 * r + 1);
    std::vector<int32_t> cand_store(most);
    std::vector<double> score_store(most);
    int32_t* cand = cand_store.data();
    double* score = score_store.data();
    for (int64_t z = z0; z < z1; ++z) {
      const int64_t za = std::max<int64_t>(0, z - r), zb = std::min<int64_t>(d - 1, z + r);
      for (int64_t y = 0; y < h; ++y) {
        const int64_t ya = std::max<int64_t>(0, y - r), yb = std::min<int64_t>(h - 1, y + r);
        for (int64_t x = 0; x < w; ++x) {
          const int64_t i = (z * h + y) * w + x;
          if (!todo[i]) continue;
          const int64_t xa = std::max<int64_t>(0, x - r), xb = std::min<int64_t>(w - 1, x + r);
          int count = 0, last = 0;
          const int64_t here = (z * hp + y) * wp + x;  // this voxel's read at offset (−s, −s, −s)
          for (int64_t zz = za; zz <= zb; ++zz) {
            for (int64_t yy = ya; yy <= yb; ++yy) {
              for (int64_t xx = xa; xx <= xb; ++xx) {
                const int64_t j = (zz * h + yy) * w + xx;
                for (int a = 0; a < n; ++a) {
                  const int32_t l = labels[a][here + step[chosen[a][j]]];
                  const double v = weights[a * total + j];
                  if (count == 0 || cand[last] != l) {
                    int c = 0;
                    while (c < count && cand[c] != l) ++c;
                    if (c == count) {
                      cand[count] = l;
                      score[count++] = 0;
                    }
                    last = c;
                  }
                  score[last] += v;
                }
              }
            }
          }
          int best = 0;
          for (int c = 1; c < count; ++c) {
            if (score[c] > score[best] || (score[c] == score[best] && cand[c] < cand[best])) best = c;
          }
          out[i] = cand[best];
        }
      }
    }
  });
}

}  // namespace autoreg::segmentation::detail
