// The pairs a network learns from: drawn from a training set (train.h) with the step's
// random generator, augmented, with synthetic images where asked; and the fixed pairs it
// is validated on. Shared by training and the architecture search, so that both see
// their data the same way.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "autoreg/registration/network.h"
#include "autoreg/registration/training_set.h"

namespace autoreg::registration {

struct DrawOptions {
  bool augment = true;              // random smooth deformation + intensity
  double deformation_voxels = 2.0;  // σ of the random deformation, model voxels
  double synthetic_fraction = 0.0;  // share of images synthesised from their label maps
};

struct TrainingPair {
  at::Tensor moving, fixed;                // 1×1×D×H×W float, on the CPU
  at::Tensor moving_labels, fixed_labels;  // int (moving's possibly float after warping); undefined: none
  // An image of the pair was synthesised: its similarity measures the synthesiser, not
  // the alignment, so such a pair learns from its label maps alone when it has them.
  bool synthetic = false;
};

// The randomness of slot `slot` of training or search step `step`: the generator its
// draws use, returned, and torch's default generator (augmentation, synthesis), seeded.
// Both depend on (seed, step, slot) alone, so that resuming repeats a step exactly and
// any number of ranks draws the same pairs; slot 0 draws as a step did before batches.
std::mt19937_64 step_generator(uint64_t seed, int64_t step, int64_t slot);

// A random pair from `pool` (set.train or set.validation): a moving subject and, in
// atlas mode, the atlas, in pairwise mode another subject of the pool. Randomness: `rng`
// for the choice and torch's default generator for augmentation and synthesis.
// Throws std::invalid_argument when the pool cannot make a pair.
TrainingPair draw_pair(const TrainingSet& set, const std::vector<Subject>& pool, const DrawOptions& options,
                       std::mt19937_64& rng);

// The same random box of a pair's images and label maps: `share` of each axis (rounded
// down to a multiple of 4, the networks' need; at least 4), at a random place drawn
// from `rng`. share >= 1: the pair as it is.
TrainingPair crop_pair(const TrainingPair& pair, double share, std::mt19937_64& rng);

// The validation pairs (moving, fixed), both labelled: every validation subject to the
// atlas (atlas mode) or to the next validation subject (pairwise).
std::vector<std::pair<const Subject*, const Subject*>> validation_pairs(const TrainingSet& set);

// A subject's image for validation: its own, or (without one) an image synthesised from
// its labels with a generator seeded from (seed, index), so the same at every validation.
at::Tensor validation_image(const Subject& subject, const at::Tensor& intensity_table, uint64_t seed, int64_t index);

// The mean over the validation pairs of the mean Dice of the moving label map warped by
// the network's field (nearest) against the fixed one; NaN without labelled pairs.
double validation_dice(RegistrationNetwork& network, const TrainingSet& set, uint64_t seed, const at::Device& device);

// validation_dice, and the mean share of folded voxels (det J ≤ 0, %) of the fields.
struct ValidationScores {
  double dice = 0, folding_percent = 0;  // NaN without labelled pairs
  int64_t pairs = 0;
};
ValidationScores validation_scores(RegistrationNetwork& network, const TrainingSet& set, uint64_t seed,
                                   const at::Device& device);

}  // namespace autoreg::registration
