#include "autoreg/search/slot_sampler.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace autoreg::search {

SlotSampler::SlotSampler(registration::TrainingSet data, const SearchOptions& options)
    : data_(std::move(data)),
      batch_(options.batch),
      seed_(options.seed),
      update_crop_(options.update_crop),
      weight_crop_(options.weight_crop) {
  const bool atlas = data_.atlas.has_value();
  if (data_.train.size() < (atlas ? 1u : 2u)) {
    throw std::invalid_argument(atlas ? "the search needs at least one training subject besides the atlas"
                                      : "a pairwise search needs at least two training subjects");
  }
  if (registration::validation_pairs(data_).empty()) {
    throw std::invalid_argument(
        "the search needs labelled validation subjects ('val' rows with label maps): α and λ are chosen on them, λ to "
        "raise the Dice of their warped labels; " +
        std::string(atlas ? "and an atlas with labels" : "at least two of them in pairwise mode"));
  }
  for (const auto& s : data_.validation) {
    if (s.labels.defined()) labelled_validation_.push_back(s);
  }
  draw_.augment = options.augment;
  draw_.deformation_voxels = options.deformation_voxels;
  plain_.augment = false;
}

std::vector<Slot> SlotSampler::draw(int64_t step, std::mt19937_64& step_rng, bool crop_weights, int rank,
                                    int world) const {
  std::vector<Slot> slots;
  for (int64_t g = rank; g < batch_; g += world) {
    // Slot 0 goes on from the step's generators (as a step did before batches), slot g
    // starts from (seed, step, g): the same pairs whichever rank draws them.
    std::mt19937_64 own;
    std::mt19937_64* rng = &step_rng;
    if (g > 0) {
      own = registration::step_generator(seed_, step, g);
      rng = &own;
    }
    Slot s;
    s.train = registration::draw_pair(data_, data_.train, draw_, *rng);
    s.val = registration::draw_pair(data_, labelled_validation_, plain_, *rng);
    // What α and λ see: one box of each pair.
    s.train_box = registration::crop_pair(s.train, update_crop_, *rng);
    s.val_box = registration::crop_pair(s.val, update_crop_, *rng);
    s.weight_pair = crop_weights ? registration::crop_pair(s.train, weight_crop_, *rng) : s.train;
    slots.push_back(std::move(s));
  }
  if (slots.empty()) throw std::logic_error("a rank without a slot: the batch is smaller than the ranks");
  return slots;
}

}  // namespace autoreg::search
