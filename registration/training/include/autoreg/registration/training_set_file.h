// A training set as one file (archive.h, kind TRAINING_SET): the preprocessed subjects on
// the model grid (images float32 in [0, 1], label maps int16) with the model description
// they were prepared for (grid, spacing, normalisation, orientation, network). `autoreg
// pack` writes it from a manifest (through io/ and ITK); reading it needs neither, so a
// machine without ITK (a GPU machine, scripts/device-check.sh) trains and searches on it.
//
//   AUTOREG TRAINING_SET
//   <the model description's fields>      as in a model file
//   subjects 7, subject.<k>.name ..., subject.<k>.split train|val|atlas
//   tensor subject/<k>/image float32 5 1 1 D H W
//   tensor subject/<k>/labels int16 5 1 1 D H W      (absent: no label map)
//   tensor intensity_table ...                       (absent: none)
#pragma once

#include <string>

#include "autoreg/registration/model_file.h"
#include "autoreg/registration/training_set.h"

namespace autoreg::registration {

struct TrainingSetFile {
  TrainingSet set;
  ModelInfo info;  // the grid and frame the subjects are on
};

// Writes atomically. Label values must fit int16 (FreeSurfer's and most atlases' do);
// throws std::invalid_argument otherwise.
void write_training_set(const std::string& path, const TrainingSet& set, const ModelInfo& info);
// Throws ModelFileError (naming the file) for anything but a readable training set whose
// volumes are on its grid.
TrainingSetFile read_training_set(const std::string& path);

}  // namespace autoreg::registration
