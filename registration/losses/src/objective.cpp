#include "autoreg/registration/objective.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "autoreg/ops.h"
#include "autoreg/registration/labels.h"
#include "autoreg/registration/regularization.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::registration {
namespace {

at::Tensor half(const at::Tensor& t) { return at::avg_pool3d(t, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true); }

// half(one_hot(labels, values)) without the full-resolution one-hot map (a channel per
// label: ~100 × the volume, 0.27 s to build and pool at 80×80×100): every voxel adds its
// share of its 2×2×2 cell (1/8, more where an odd size leaves a thinner last cell) to its
// label's channel. N×len(values)×⌈D/2⌉×⌈H/2⌉×⌈W/2⌉ float.
at::Tensor pooled_one_hot(const at::Tensor& labels, const std::vector<int64_t>& values) {
  const at::Tensor l = labels.detach().cpu().to(at::kLong);
  const int64_t n = l.size(0), d = l.size(2), h = l.size(3), w = l.size(4);
  const int64_t hd = (d + 1) / 2, hh = (h + 1) / 2, hw = (w + 1) / 2;
  const int64_t top = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  const int64_t bottom = values.empty() ? 0 : *std::min_element(values.begin(), values.end());
  // label value → channel, −1 for values not asked for.
  at::Tensor channel_of = at::full({top - bottom + 1}, -1, at::kLong);
  for (size_t c = 0; c < values.size(); ++c) channel_of[values[c] - bottom] = int64_t(c);
  const at::Tensor inside = (l >= bottom) & (l <= top);
  at::Tensor channel = at::where(inside, channel_of.index({(l - bottom).clamp(0, top - bottom)}), at::full_like(l, -1));
  // Each voxel's cell and its share of it, axis by axis.
  const auto axis = [](int64_t size) {
    const at::Tensor i = at::arange(size, at::kLong);
    const at::Tensor cell = at::floor_divide(i, 2);
    const at::Tensor share = at::where((size % 2 == 1) & (i == size - 1), at::ones({size}, at::kDouble),
                                       at::full({size}, 0.5, at::kDouble));
    return std::pair<at::Tensor, at::Tensor>{cell, share};
  };
  const auto [cz, sz] = axis(d);
  const auto [cy, sy] = axis(h);
  const auto [cx, sx] = axis(w);
  const at::Tensor cell = (cz.view({d, 1, 1}) * hh + cy.view({1, h, 1})) * hw + cx.view({1, 1, w});
  const at::Tensor share = (sz.view({d, 1, 1}) * sy.view({1, h, 1}) * sx.view({1, 1, w})).to(at::kFloat);
  const int64_t cells = hd * hh * hw, k = int64_t(values.size());
  at::Tensor out = at::zeros({n * k * cells}, at::kFloat);
  for (int64_t b = 0; b < n; ++b) {
    const at::Tensor c = channel[b][0];
    const at::Tensor keep = c >= 0;
    const at::Tensor index = (b * k + c.masked_select(keep)) * cells + cell.masked_select(keep);
    out.index_put_({index}, share.masked_select(keep), /*accumulate=*/true);
  }
  return out.view({n, k, hd, hh, hw});
}

}  // namespace

ObjectiveWeights ObjectiveWeights::for_similarity(Similarity kind, double smoothness) {
  ObjectiveWeights w;
  w.lambda = {0, 0, 0, 0, smoothness};
  switch (kind) {
    case Similarity::Ncc: w.lambda[kNcc9] = 1; break;
    case Similarity::Mind: w.lambda[kMind] = 1; break;
    case Similarity::Mse: throw std::invalid_argument("mse is not an objective term; use the similarity option");
  }
  return w;
}

ObjectiveWeights ObjectiveWeights::parse(const std::string& text) {
  ObjectiveWeights w;
  w.lambda.fill(0);
  std::stringstream items(text);
  std::string item;
  bool any = false;
  while (std::getline(items, item, ',')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    const size_t eq = item.find('=');
    const auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t") + 1);
      return s;
    };
    const std::string name = trim(item.substr(0, eq));
    int index = -1;
    for (int i = 0; i < kObjectiveTerms; ++i) {
      if (name == kObjectiveTermNames[i]) index = i;
    }
    if (eq == std::string::npos || index < 0) {
      std::string known;
      for (const char* n : kObjectiveTermNames) known += std::string(known.empty() ? "" : ", ") + n;
      throw std::invalid_argument("objective weights: '" + trim(item) + "' is not NAME=VALUE with NAME one of " + known);
    }
    const std::string value = trim(item.substr(eq + 1));
    size_t used = 0;
    double v = std::nan("");
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(v) || v < 0) {
      throw std::invalid_argument("objective weights: " + name + " needs a finite value >= 0, got '" + value + "'");
    }
    w.lambda[index] = v;
    any = true;
  }
  if (!any) throw std::invalid_argument("objective weights: empty (expected e.g. ncc9=1,smoothness=1)");
  return w;
}

std::string ObjectiveWeights::to_string() const {
  std::ostringstream s;
  s.precision(17);
  for (int i = 0; i < kObjectiveTerms; ++i) s << (i ? "," : "") << kObjectiveTermNames[i] << "=" << lambda[i];
  return s.str();
}

std::array<bool, kObjectiveTerms> needed_terms(const ObjectiveWeights& weights) {
  std::array<bool, kObjectiveTerms> needed{};
  for (int i = 0; i < kObjectiveTerms; ++i) needed[i] = weights.lambda[i] != 0;
  return needed;
}

at::Tensor objective_terms(const at::Tensor& fixed, const at::Tensor& warped, const at::Tensor& u,
                           const std::array<bool, kObjectiveTerms>& needed) {
  std::vector<at::Tensor> terms(kObjectiveTerms);
  const at::Tensor zero = at::zeros({}, warped.options());
  at::Tensor f = fixed, w = warped;
  const int64_t windows[3] = {9, 7, 5};
  for (int s = 0; s < 3; ++s) {
    if (s > 0 && (needed[kNcc7Half] || needed[kNcc5Quarter])) {
      f = half(f);
      w = half(w);
    }
    terms[s] = needed[s] ? 1 - local_ncc(f, w, windows[s]) : zero;
  }
  terms[kMind] = needed[kMind] ? (mind_ssc(fixed) - mind_ssc(warped)).pow(2).mean() : zero;
  terms[kSmoothness] = needed[kSmoothness] ? gradient_l2(u) : zero;
  return at::stack(terms);
}

at::Tensor label_dice_loss(const at::Tensor& moving_labels, const at::Tensor& fixed_labels, const at::Tensor& u,
                           const std::vector<int64_t>& labels) {
  const auto device = u.device();
  const auto dtype = u.scalar_type();
  const at::Tensor moving = pooled_one_hot(moving_labels, labels).to(device, dtype);
  const at::Tensor fixed = pooled_one_hot(fixed_labels, labels).to(device, dtype);
  return soft_dice_loss(fixed, ops::warp(moving, half(u) * 0.5));
}

}  // namespace autoreg::registration
