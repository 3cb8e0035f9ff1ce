#include "search.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>

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

Searched search(const at::Tensor& target_in, const at::Tensor& atlas_in, const at::Tensor& labels_in, int s, int r) {
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
  SearchVolumes v;
  v.target = target.data_ptr<float>();
  v.atlas = out.image.data_ptr<float>();
  v.best = out.msd.data_ptr<float>();
  v.chosen = out.chosen.data_ptr<int16_t>();
  v.d = d;
  v.h = h;
  v.w = w;
  v.s = s;
  v.r = r;
  const std::vector<std::array<int, 3>> offsets = search_offsets(s);
  // Slabs of planes, a few per thread (each recomputes 2r planes of its neighbours').
  const int64_t slabs = std::min<int64_t>(d, 4 * int64_t(at::get_num_threads()));
  at::parallel_for(0, slabs, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t sl = s0; sl < s1; ++sl) search_slab(v, offsets, sl * d / slabs, (sl + 1) * d / slabs);
  });
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
    msd.push_back(a.msd.data_ptr<float>());
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
    std::vector<float> err(static_cast<size_t>(n) * side * side * side);
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
                  for (int a = 0; a < n; ++a) err[size_t(a) * side * side * side + count] = std::abs(tv - image[a][p + shift[a]]);
                  ++count;
                }
              }
            }
            const int64_t stride = int64_t(side) * side * side;
            for (int a = 0; a < n; ++a) {
              for (int b = a; b < n; ++b) {
                double sum = 0;
                for (int k = 0; k < count; ++k) sum += double(err[a * stride + k]) * err[b * stride + k];
                m[a * n + b] = m[b * n + a] = sum / count;
              }
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

void vote_searched_patches(Fused& fused, const std::vector<Searched>& atlases, const Options& o) {
  const int n = int(atlases.size());
  const int s = o.search_radius, r = o.patch_radius;
  const int64_t d = fused.labels.size(0), h = fused.labels.size(1), w = fused.labels.size(2), total = d * h * w;
  const int64_t hp = h + 2 * s, wp = w + 2 * s;
  const std::vector<int64_t> step = padded_steps(s, hp, wp);
  // Only voxels near a disagreement can change: those within r of one.
  at::Tensor differ = at::zeros({d, h, w}, at::kBool);
  for (int a = 1; a < n; ++a) differ.logical_or_(fused.searched_labels[a].ne(fused.searched_labels[0]));
  const at::Tensor near = at::max_pool3d(differ.to(at::kFloat).unsqueeze(0), {2 * r + 1, 2 * r + 1, 2 * r + 1}, {1, 1, 1},
                                         {r, r, r})[0]
                              .gt(0)
                              .contiguous();
  const bool* todo = near.data_ptr<bool>();
  std::vector<const int16_t*> chosen;
  std::vector<const int32_t*> labels;
  for (const auto& a : atlases) {
    chosen.push_back(a.chosen.data_ptr<int16_t>());
    labels.push_back(a.labels.data_ptr<int32_t>());
  }
  const float* weights = fused.weights.data_ptr<float>();
  int32_t* out = fused.labels.data_ptr<int32_t>();
  at::parallel_for(0, d, 1, [&](int64_t z0, int64_t z1) {
    std::vector<int32_t> cand;
    std::vector<double> score;
    for (int64_t z = z0; z < z1; ++z) {
      for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
          const int64_t i = (z * h + y) * w + x;
          if (!todo[i]) continue;
          cand.clear();
          score.clear();
          const int64_t here = (z * hp + y) * wp + x;  // this voxel's read at offset (−s, −s, −s)
          for (int64_t zz = std::max<int64_t>(0, z - r); zz <= std::min<int64_t>(d - 1, z + r); ++zz) {
            for (int64_t yy = std::max<int64_t>(0, y - r); yy <= std::min<int64_t>(h - 1, y + r); ++yy) {
              for (int64_t xx = std::max<int64_t>(0, x - r); xx <= std::min<int64_t>(w - 1, x + r); ++xx) {
                const int64_t j = (zz * h + yy) * w + xx;
                for (int a = 0; a < n; ++a) {
                  const int32_t l = labels[a][here + step[chosen[a][j]]];
                  const double v = weights[a * total + j];
                  size_t c = 0;
                  while (c < cand.size() && cand[c] != l) ++c;
                  if (c == cand.size()) {
                    cand.push_back(l);
                    score.push_back(0);
                  }
                  score[c] += v;
                }
              }
            }
          }
          size_t best = 0;
          for (size_t c = 1; c < cand.size(); ++c) {
            if (score[c] > score[best] || (score[c] == score[best] && cand[c] < cand[best])) best = c;
          }
          out[i] = cand[best];
        }
      }
    }
  });
}

}  // namespace autoreg::segmentation::detail
