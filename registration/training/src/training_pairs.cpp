#include "autoreg/registration/training_pairs.h"

#include <ATen/ATen.h>

#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/metrics.h"

namespace autoreg::registration {

std::mt19937_64 step_generator(uint64_t seed, int64_t step, int64_t slot) {
  const uint64_t salt = uint64_t(slot) * 0xD1B54A32D192ED03ULL;
  at::manual_seed(seed * 1000003ULL + uint64_t(step) + salt);
  return std::mt19937_64(seed * 0x9E3779B97F4A7C15ULL + uint64_t(step) + salt);
}
namespace {

// A subject's image for this step: its own, or one synthesised from its labels.
at::Tensor image_for_step(const Subject& s, const at::Tensor& table, bool synthesise) {
  const bool can_synthesise = s.labels.defined() && table.defined();
  if (can_synthesise && (synthesise || !s.image.defined())) return synthesize_image(s.labels, table);
  return s.image;
}

}  // namespace

TrainingPair draw_pair(const TrainingSet& set, const std::vector<Subject>& pool, const DrawOptions& options,
                       std::mt19937_64& rng) {
  const bool atlas = set.atlas.has_value();
  // One subject pairwise: with itself, the moving copy deformed (augmentation).
  const bool alone = !atlas && pool.size() == 1 && options.augment;
  if (pool.empty() || (pool.size() < 2 && !atlas && !alone)) {
    throw std::invalid_argument(atlas ? "a pair needs a subject besides the atlas"
                                      : "a pair needs two subjects (or one, with augmentation)");
  }
  std::uniform_real_distribution<double> uniform(0, 1);
  const Subject& moving = pool[rng() % pool.size()];
  const Subject* fixed = atlas ? &*set.atlas : alone ? &moving : nullptr;
  if (!fixed) {
    const size_t a = &moving - pool.data();
    fixed = &pool[(a + 1 + rng() % (pool.size() - 1)) % pool.size()];
  }
  const bool synth_m = uniform(rng) < options.synthetic_fraction;
  const bool synth_f = !atlas && uniform(rng) < options.synthetic_fraction;
  TrainingPair p;
  p.moving = image_for_step(moving, set.intensity_table, synth_m);
  p.fixed = atlas ? fixed->image : image_for_step(*fixed, set.intensity_table, synth_f);
  p.moving_labels = moving.labels;
  p.fixed_labels = fixed->labels;
  p.synthetic = synth_m || !moving.image.defined() || (!atlas && (synth_f || !fixed->image.defined()));
  if (options.augment) {
    const at::Tensor field = random_smooth_field(p.moving.sizes().slice(2), options.deformation_voxels);
    p.moving = ops::warp(p.moving, field, ops::Interpolation::Linear, ops::Padding::Border);
    if (p.moving_labels.defined()) {
      p.moving_labels = ops::warp(p.moving_labels.to(at::kFloat), field, ops::Interpolation::Nearest, ops::Padding::Zeros);
    }
    p.moving = augment_intensity(p.moving);
    if (!atlas) p.fixed = augment_intensity(p.fixed);
  }
  return p;
}

TrainingPair crop_pair(const TrainingPair& p, double share, std::mt19937_64& rng) {
  if (share >= 1) return p;
  TrainingPair c = p;
  for (int d = 0; d < 3; ++d) {
    const int64_t size = p.moving.size(2 + d);
    const int64_t keep = std::max<int64_t>(4, int64_t(share * double(size)) / 4 * 4);
    if (keep >= size) continue;
    const int64_t start = int64_t(rng() % uint64_t(size - keep + 1));
    for (at::Tensor* t : {&c.moving, &c.fixed, &c.moving_labels, &c.fixed_labels}) {
      if (t->defined()) *t = t->narrow(2 + d, start, keep);
    }
  }
  return c;
}

std::vector<std::pair<const Subject*, const Subject*>> validation_pairs(const TrainingSet& set) {
  std::vector<std::pair<const Subject*, const Subject*>> pairs;
  const auto& v = set.validation;
  for (size_t i = 0; i < v.size(); ++i) {
    const Subject* fixed = set.atlas ? &*set.atlas : v.size() > 1 ? &v[(i + 1) % v.size()] : nullptr;
    if (fixed && v[i].labels.defined() && fixed->labels.defined()) pairs.emplace_back(&v[i], fixed);
  }
  return pairs;
}

at::Tensor validation_image(const Subject& subject, const at::Tensor& intensity_table, uint64_t seed, int64_t index) {
  if (subject.image.defined()) return subject.image;
  at::manual_seed(seed + 7777 + uint64_t(index));
  return synthesize_image(subject.labels, intensity_table);
}

ValidationScores validation_scores(RegistrationNetwork& network, const TrainingSet& set, uint64_t seed,
                                   const at::Device& device) {
  c10::AutoGradMode no_grad(false);
  network.eval();
  const auto pairs = validation_pairs(set);
  double dice = 0, folding = 0;
  int n = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [moving, fixed] = pairs[i];
    // Subjects without an image are seen through one synthetic image each, the same at
    // every validation.
    const at::Tensor u = network.forward(validation_image(*moving, set.intensity_table, seed, int64_t(i)).to(device),
                                         validation_image(*fixed, set.intensity_table, seed, int64_t(i) + 1).to(device));
    const at::Tensor warped = ops::warp(moving->labels.to(device).to(at::kFloat), u, ops::Interpolation::Nearest,
                                        ops::Padding::Zeros);
    const double d = mean_dice(warped.cpu().to(at::kInt), fixed->labels);
    if (std::isfinite(d)) {
      dice += d;
      folding += jacobian_stats(u.cpu()).non_positive_percent;
      ++n;
    }
  }
  network.train();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {n ? dice / n : nan, n ? folding / n : nan, n};
}

double validation_dice(RegistrationNetwork& network, const TrainingSet& set, uint64_t seed, const at::Device& device) {
  return validation_scores(network, set, seed, device).dice;
}

}  // namespace autoreg::registration
