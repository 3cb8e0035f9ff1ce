// The pairs a search step learns from: its `batch` slots, each a training pair and a
// labelled validation pair, the boxes of them that α's and λ's updates see
// (update_crop), and the pair ω's step sees (a box of the training pair with weight_crop
// on the supernet). Slot 0 goes on from the step's generator, slot g > 0 starts from
// step_generator(seed, step, g): a slot's pairs do not depend on which rank draws it
// (rank r draws g = r, r + world, ...), so a step does not depend on the number of ranks.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "autoreg/registration/training_pairs.h"
#include "autoreg/registration/training_set.h"
#include "autoreg/search/search_options.h"

namespace autoreg::search {

struct Slot {
  registration::TrainingPair train, val, train_box, val_box, weight_pair;
};

class SlotSampler {
 public:
  // Throws std::invalid_argument when the set cannot feed a search: too few training
  // subjects, or no labelled validation pair (α and λ are chosen on them).
  SlotSampler(registration::TrainingSet data, const SearchOptions& options);

  // This rank's slots of step `step`; `step_rng`: the step's generator (slot 0's).
  // `crop_weights`: ω's pair is a weight_crop box of the training pair.
  std::vector<Slot> draw(int64_t step, std::mt19937_64& step_rng, bool crop_weights, int rank, int world) const;

  const registration::TrainingSet& data() const { return data_; }

 private:
  registration::TrainingSet data_;
  std::vector<registration::Subject> labelled_validation_;
  registration::DrawOptions draw_, plain_;
  int64_t batch_;
  uint64_t seed_;
  double update_crop_, weight_crop_;
};

}  // namespace autoreg::search
