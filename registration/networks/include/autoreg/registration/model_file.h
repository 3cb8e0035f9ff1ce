// A trained registration model and its file (.autoreg, docs/formats.md): self-describing
// (format version, network kind and genotype, network options, the grid and intensity
// normalisation it expects, notes on how it was trained) and the weights, in the
// archive container (archive.h). Loading needs no other file; saving and loading
// round-trip the weights exactly.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "autoreg/registration/archive.h"
#include "autoreg/registration/network.h"

namespace autoreg::registration {

struct ModelInfo {
  NetworkSpec network;
  std::array<int64_t, 3> grid{96, 96, 96};  // voxels along D, H, W (tensor order)
  std::array<double, 3> spacing{2, 2, 2};   // mm along D, H, W
  // How intensities are mapped before the network: percentiles to 0 and 1, clipped.
  std::array<double, 2> normalization{0.5, 99.5};
  // The anatomical directions of the grid's axes W, H, D (voxel i, j, k) as an
  // orientation code (io::with_orientation's letters: "ASL" = i towards Anterior, j
  // Superior, k Left), the axes of the volumes it was trained on: the model frame of any
  // fixed image uses these axes, so the network sees anatomy as in training whatever the
  // input's voxel order. Empty (models from before): the fixed image's own axes.
  std::string orientation;
  std::map<std::string, std::string> notes;  // training recipe and results, for people
};

struct Model {
  ModelInfo info;
  std::shared_ptr<RegistrationNetwork> network;
};

// A model with a freshly initialised network.
Model make_model(const ModelInfo& info);

// Identity feature-wise transformations after every operation of the model's network
// (feature_transform.h), recorded in its description; nothing when it has them. A
// model file with them is written as archive format 3 (an older autoreg refuses it
// instead of misreading it); one without them loads and behaves as before.
void add_feature_transforms(Model& model);

void save_model(const std::string& path, const Model& model);
Model load_model(const std::string& path);

// The model as archive fields and tensors (parameters under "param/<name>"), and back:
// what checkpoints (training) store alongside the optimiser's state.
Archive model_archive(const Model& model);
Model model_from_archive(const Archive& archive, const std::string& path);
// The model's description alone (no weights): what a training set file carries.
Archive info_archive(const ModelInfo& info);
ModelInfo info_from_archive(const Archive& archive, const std::string& path);

}  // namespace autoreg::registration
