#include "autoreg/segmentation/fusion.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "local_stats.h"
#include "search.h"
#include "voting.h"

namespace autoreg::segmentation {

namespace {

void check_inputs(const at::Tensor& target, const Atlases& atlases, const Options& o) {
  if (atlases.images.empty()) throw std::invalid_argument("label fusion needs at least one atlas");
  if (atlases.images.size() != atlases.labels.size()) {
    throw std::invalid_argument("label fusion: " + std::to_string(atlases.images.size()) + " atlas images but " +
                                std::to_string(atlases.labels.size()) + " label maps");
  }
  if (target.dim() != 3) throw std::invalid_argument("label fusion: the target must be D×H×W");
  for (size_t a = 0; a < atlases.images.size(); ++a) {
    const at::Tensor& image = atlases.images[a];
    const at::Tensor& labels = atlases.labels[a];
    const std::string which = "atlas " + std::to_string(a);
    if (!image.sizes().equals(target.sizes()) || !labels.sizes().equals(target.sizes())) {
      throw std::invalid_argument("label fusion: " + which + " is not on the target's grid");
    }
    if (at::isFloatingType(labels.scalar_type()) || labels.scalar_type() == at::kBool) {
      throw std::invalid_argument("label fusion: " + which + "'s label map is not an integer map");
    }
    if (o.method != Method::Majority && !at::isfinite(image).all().item<bool>()) {
      throw std::invalid_argument("label fusion: " + which + "'s image has non-finite values");
    }
  }
  if (o.method != Method::Majority && !at::isfinite(target).all().item<bool>()) {
    throw std::invalid_argument("label fusion: the target has non-finite values");
  }
  if (o.patch_radius < 0 || o.patch_radius > 8) throw std::invalid_argument("label fusion: patch radius must be 0-8");
  if (o.search_radius < 0 || o.search_radius > 4) throw std::invalid_argument("label fusion: search radius must be 0-4");
  if (!(o.alpha > 0) || !(o.beta > 0) || !(o.power > 0)) {
    throw std::invalid_argument("label fusion: alpha, beta and power must be positive");
  }
}

// An image's centre and the ε of its local normalisation (local_stats.h).
struct Scale {
  double center, eps;
};

// Planes per slab so that one slab's working tensors stay near 256 MB.
int64_t slab_planes(const Options& o, int64_t d, int64_t plane, int64_t atlases) {
  if (o.slab_planes > 0) return std::min(o.slab_planes, d);
  const int64_t arrays = 4 + 3 * atlases + (o.method == Method::Jlf ? atlases * (atlases + 1) / 2 : 0);
  const int64_t bytes_per_plane = std::max<int64_t>(1, plane * arrays * 4);
  return std::clamp<int64_t>((int64_t(256) << 20) / bytes_per_plane, 1, d);
}

// The fusion of a block (the whole volume, or the box where the atlases disagree with a
// margin), each image normalised with its whole image's scale.
Fused fuse_block(const at::Tensor& target_in, const Atlases& atlases, const std::vector<Scale>& scales,
                 const Scale& target_scale, const Options& o) {
  const int n = int(atlases.images.size());
  const int64_t depth = target_in.size(0), plane = target_in.size(1) * target_in.size(2);
  const int r = o.method == Method::Majority ? 0 : o.patch_radius;
  const int64_t halo = 2 * int64_t(r);  // the patch, and the local normalisation of its voxels
  const at::Tensor target = target_in.to(at::kFloat).contiguous();

  Fused out;
  out.labels = at::empty(target.sizes(), target.options().dtype(at::kInt));
  if (o.keep_weights) out.weights = at::empty({n, depth, target.size(1), target.size(2)}, target.options());
  int32_t* labels_out = out.labels.data_ptr<int32_t>();
  std::atomic<int64_t> unanimous{0};

  const int64_t step = slab_planes(o, depth, plane, n);
  for (int64_t z0 = 0; z0 < depth; z0 += step) {
    const int64_t z1 = std::min(depth, z0 + step);
    const int64_t h0 = std::max<int64_t>(0, z0 - halo), h1 = std::min(depth, z1 + halo);
    const int64_t core = z0 - h0, planes = z1 - z0;
    // The atlases' labels on the core planes, A×planes×H×W.
    std::vector<at::Tensor> ls;
    for (const auto& l : atlases.labels) ls.push_back(l.slice(0, z0, z1).to(at::kInt));
    const at::Tensor labels = at::stack(ls).contiguous();
    // Per-atlas similarity tensors on the core planes: `local` A×planes×H×W (weighted)
    // or the pairs' products (jlf), each the local mean over the patch.
    at::Tensor local;
    std::vector<at::Tensor> pairs;
    if (o.method != Method::Majority) {
      const at::Tensor t = o.normalise ? detail::local_zscore(target.slice(0, h0, h1), r, target_scale.center, target_scale.eps)
                                       : target.slice(0, h0, h1);
      std::vector<at::Tensor> diffs, msd;
      for (int a = 0; a < n; ++a) {
        const at::Tensor image = atlases.images[size_t(a)].slice(0, h0, h1).to(at::kFloat);
        const at::Tensor a_hat = o.normalise ? detail::local_zscore(image, r, scales[size_t(a)].center, scales[size_t(a)].eps) : image;
        diffs.push_back((t - a_hat).abs_());
      }
      const auto core_of = [&](const at::Tensor& x) { return x.slice(0, core, core + planes); };
      if (o.method == Method::Weighted) {
        for (const auto& d : diffs) msd.push_back(core_of(detail::box_mean(d * d, r)));
        local = at::stack(msd).contiguous();
      } else {
        for (int a = 0; a < n; ++a) {
          for (int b = a; b < n; ++b) pairs.push_back(core_of(detail::box_mean(diffs[a] * diffs[b], r)).contiguous());
        }
      }
    }
    std::vector<const float*> pair_ptr;
    for (const auto& p : pairs) pair_ptr.push_back(p.data_ptr<float>());
    const int32_t* lab = labels.data_ptr<int32_t>();
    const float* loc = local.defined() ? local.data_ptr<float>() : nullptr;
    float* weights_out = o.keep_weights ? out.weights.data_ptr<float>() : nullptr;
    const int64_t count = planes * plane, offset = z0 * plane, total = depth * plane;

    at::parallel_for(0, planes, 1, [&](int64_t p0, int64_t p1) {
      std::vector<int32_t> l(static_cast<size_t>(n));
      std::vector<double> w(static_cast<size_t>(n)), m(static_cast<size_t>(n) * n);
      int64_t agreed = 0;
      for (int64_t i = p0 * plane; i < p1 * plane; ++i) {
        bool same = true;
        for (int a = 0; a < n; ++a) {
          l[a] = lab[a * count + i];
          same = same && l[a] == l[0];
        }
        if (same) {
          labels_out[offset + i] = l[0];
          ++agreed;
          if (weights_out) {
            for (int a = 0; a < n; ++a) weights_out[a * total + offset + i] = 1.0f / float(n);
          }
          continue;
        }
        if (o.method == Method::Majority) {
          std::fill(w.begin(), w.end(), 1.0);
        } else if (o.method == Method::Weighted) {
          for (int a = 0; a < n; ++a) w[a] = std::pow(double(loc[a * count + i]) + 1e-3, -o.power);
        } else {
          int k = 0;
          for (int a = 0; a < n; ++a) {
            for (int b = a; b < n; ++b, ++k) m[a * n + b] = m[b * n + a] = double(pair_ptr[k][i]);
          }
          detail::jlf_weights(m.data(), w.data(), n, o.alpha, o.beta);
        }
        detail::normalise_weights(w.data(), n);
        labels_out[offset + i] = detail::vote(l.data(), w.data(), n);
        if (weights_out) {
          for (int a = 0; a < n; ++a) weights_out[a * total + offset + i] = float(w[a]);
        }
      }
      unanimous += agreed;
    });
  }
  out.unanimous = unanimous;
  return out;
}

// Patch voting: each atlas's weights averaged over the patch around every voxel, then
// the vote again with them where the atlases disagree. `weights` A×D×H×W, replaced.
void vote_with_patches(Fused& f, const std::vector<at::Tensor>& atlas_labels, int r) {
  const int n = int(atlas_labels.size());
  std::vector<at::Tensor> smoothed;
  for (int a = 0; a < n; ++a) smoothed.push_back(detail::box_mean(f.weights[a].contiguous(), r));
  f.weights = at::stack(smoothed).contiguous();
  std::vector<at::Tensor> ls;
  for (const auto& l : atlas_labels) ls.push_back(l.to(at::kInt));
  const at::Tensor labels = at::stack(ls).contiguous();
  const int64_t total = f.labels.numel();
  const int32_t* lab = labels.data_ptr<int32_t>();
  const float* wt = f.weights.data_ptr<float>();
  int32_t* out = f.labels.data_ptr<int32_t>();
  at::parallel_for(0, total, 4096, [&](int64_t i0, int64_t i1) {
    std::vector<int32_t> l(static_cast<size_t>(n));
    std::vector<double> w(static_cast<size_t>(n));
    for (int64_t i = i0; i < i1; ++i) {
      bool same = true;
      for (int a = 0; a < n; ++a) {
        l[a] = lab[a * total + i];
        w[a] = wt[a * total + i];
        same = same && l[a] == l[0];
      }
      out[i] = same ? l[0] : detail::vote(l.data(), w.data(), n);
    }
  });
}

}  // namespace

Fused fuse(const at::Tensor& target, const Atlases& atlases, const Options& o) {
  check_inputs(target, atlases, o);
  const int n = int(atlases.images.size());
  // Each image's centre and ε for its local normalisation, from the whole image (so that
  // every slab and block uses the same).
  const auto scale_of = [](const at::Tensor& x) {
    const at::Tensor f = x.to(at::kFloat);
    return Scale{f.mean().item<double>(), 0.01 * (f.max() - f.min()).item<double>() + 1e-12};
  };
  std::vector<Scale> scales;
  if (o.method != Method::Majority) {
    for (const auto& image : atlases.images) scales.push_back(scale_of(image));
  }
  const Scale target_scale = o.method != Method::Majority ? scale_of(target) : Scale{0, 1};
  auto lap = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> stages;
  const auto stage = [&](const char* name) {
    const auto now = std::chrono::steady_clock::now();
    stages.emplace_back(name, std::chrono::duration<double>(now - lap).count());
    lap = now;
  };
  // Only the box where the atlases disagree needs weights (a head volume is mostly
  // air, where they all say 0), with a margin of 2r: the patches of its voxels and the
  // local normalisation of theirs. Voxels outside it are unanimous.
  const at::Tensor first = atlases.labels[0].to(at::kInt);
  at::Tensor differ = at::zeros(target.sizes(), at::kBool);
  for (size_t a = 1; a < atlases.labels.size(); ++a) differ.logical_or_(atlases.labels[a].to(at::kInt).ne(first));
  Fused out;
  out.labels = first.contiguous().clone();
  if (o.keep_weights) out.weights = at::full({n, target.size(0), target.size(1), target.size(2)}, 1.0 / n, at::kFloat);
  out.unanimous = target.numel();
  if (!differ.any().item<bool>()) return out;
  if (!o.crop) differ.fill_(true);
  const bool search = o.method != Method::Majority && o.search_radius > 0;
  // The patches of the box's voxels and the local normalisation of theirs (2r), and the
  // search's reach.
  const int64_t margin = o.method == Method::Majority ? 0 : 2 * int64_t(o.patch_radius) + (search ? o.search_radius : 0);
  std::array<int64_t, 3> lo{}, hi{};
  for (int64_t d = 0; d < 3; ++d) {
    std::vector<int64_t> others;
    for (int64_t e = 0; e < 3; ++e) {
      if (e != d) others.push_back(e);
    }
    const at::Tensor along = differ.any(others[1]).any(others[0]).nonzero();
    lo[d] = std::max<int64_t>(0, along.min().item<int64_t>() - margin);
    hi[d] = std::min<int64_t>(target.size(d), along.max().item<int64_t>() + 1 + margin);
  }
  const auto crop = [&](const at::Tensor& x) {
    return x.slice(0, lo[0], hi[0]).slice(1, lo[1], hi[1]).slice(2, lo[2], hi[2]);
  };
  Atlases box;
  for (size_t a = 0; a < atlases.images.size(); ++a) {
    box.images.push_back(crop(atlases.images[a]));
    box.labels.push_back(crop(atlases.labels[a]));
  }
  const bool patch_vote = o.patch_vote && o.method != Method::Majority && o.patch_radius > 0;
  Options block_options = o;
  if (patch_vote) block_options.keep_weights = true;
  stage("box");
  Fused inner;
  if (search) {
    // Every atlas searched where it best matches (local z-scores, each image's own scale),
    // then fused as ANTs' joint fusion does.
    const int r = o.patch_radius;
    const auto z = [&](const at::Tensor& x, const Scale& sc) {
      return o.normalise ? detail::local_zscore(x.to(at::kFloat), r, sc.center, sc.eps) : x.to(at::kFloat);
    };
    const at::Tensor t = z(crop(target), target_scale);
    // Only where some label a search reads could differ (undecided()) and the patches
    // there: elsewhere every outcome (labels, weights, labels as read) is the same for
    // any offset.
    const at::Tensor open = detail::undecided(box.labels, o.search_radius);
    const at::Tensor need = detail::dilated(open, r);
    std::vector<detail::Searched> searched;
    for (size_t a = 0; a < box.images.size(); ++a) {
      searched.push_back(detail::search(t, z(box.images[a], scales[a]), box.labels[a], o.search_radius, r, need));
      if (o.method == Method::Jlf) searched.back().msd = at::Tensor();  // jlf weighs by patch errors
    }
    stage("search");
    inner = detail::fuse_searched(t, searched, block_options);
    stage("weights");
    if (patch_vote) {
      detail::vote_searched_patches(inner, searched, o, open);
      stage("vote");
    }
    box.labels = inner.searched_labels;  // what the weights vote for
  } else {
    inner = fuse_block(crop(target), box, scales, target_scale, block_options);
    stage("weights");
    if (patch_vote) {
      vote_with_patches(inner, box.labels, o.patch_radius);
      stage("vote");
    }
  }
  crop(out.labels).copy_(inner.labels);
  if (search && o.keep_weights) {
    for (size_t a = 0; a < box.labels.size(); ++a) {
      out.searched_labels.push_back(atlases.labels[a].to(at::kInt).clone());
      crop(out.searched_labels.back()).copy_(box.labels[a]);
    }
  }
  if (o.keep_weights) {
    out.weights.slice(1, lo[0], hi[0]).slice(2, lo[1], hi[1]).slice(3, lo[2], hi[2]).copy_(inner.weights);
  }
  out.unanimous = target.numel() - inner.labels.numel() + inner.unanimous;
  out.stage_seconds = stages;
  return out;
}

at::Tensor probability(const Fused& fused, const Atlases& atlases, int64_t label) {
  if (!fused.weights.defined()) throw std::invalid_argument("label probabilities need the fusion's weights (keep_weights)");
  at::Tensor p = at::zeros(fused.labels.sizes(), fused.weights.options());
  const std::vector<at::Tensor>& labels = fused.searched_labels.empty() ? atlases.labels : fused.searched_labels;
  // Each atlas's weights where it votes for the label, 0 elsewhere, added in atlas order:
  // in one scratch volume (a product with the label's mask made two volume-sized
  // temporaries per atlas and label, each a fresh mapping of 40 MB at 256×256×160).
  // The same sums: w·1 is w, and adding w·0 (±0) to a sum that is never −0 adds nothing.
  at::Tensor term = at::empty_like(p);
  for (size_t a = 0; a < labels.size(); ++a) {
    term.copy_(fused.weights[int64_t(a)]);
    term.masked_fill_(labels[a].ne(label), 0);
    p.add_(term);
  }
  return p.clamp_(0, 1);
}

std::vector<int64_t> label_values(const Atlases& atlases) {
  std::vector<int64_t> values;
  for (const auto& l : atlases.labels) {
    const at::Tensor u = std::get<0>(at::_unique(l.to(at::kLong).flatten(), /*sorted=*/true)).contiguous();
    values.insert(values.end(), u.data_ptr<int64_t>(), u.data_ptr<int64_t>() + u.numel());
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

}  // namespace autoreg::segmentation
