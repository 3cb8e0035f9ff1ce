// What a network trains and validates on: subjects already on the model's grid (image,
// label map or both) and the set they form (training, validation, an optional atlas).
// Made from files by the pipeline (pipeline/dataset.h) or read from a packed training
// set (training_set_file.h); read by the trainer (train.h) and the search (search/).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace autoreg::registration {

struct Subject {
  std::string name;
  at::Tensor image;   // 1×1×D×H×W float32 in [0, 1] on the model grid; undefined: labels only
  at::Tensor labels;  // 1×1×D×H×W int32 on the model grid; undefined: none
};

// Pairwise mode with one training subject: it is paired with deformed copies of itself
// (needs augmentation).
struct TrainingSet {
  std::vector<Subject> train, validation;
  std::optional<Subject> atlas;  // atlas mode when set, pairwise otherwise
  at::Tensor intensity_table;    // for synthetic images (augment.h); undefined: none
};

}  // namespace autoreg::registration
