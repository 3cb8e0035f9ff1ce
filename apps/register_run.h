// One pair through `autoreg register`: reading the inputs, registering, warping and
// writing the outputs. Shared by the single-pair command and the batch (--pairs).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "autoreg/io/volume.h"
#include "autoreg/pipeline/register_pair.h"

namespace autoreg::apps {

struct RegisterParams {
  std::string fixed, moving, out_warped, out_field, moving_labels, out_labels, out_affine;
  std::string fixed_labels;  // optional: the warped labels' Dice against it in the summary
  std::string out_inverse_field;  // optional: the map back, on the moving grid (sets options.inverse)
  std::string qc;                 // optional: the QC picture (PNG)
  std::string model;         // "" = instance optimisation; the loaded model is options.model
  pipeline::PairOptions options;
  std::string fixed_orientation, moving_orientation;  // header overrides ("" = trust it)
  bool force = false;  // resample a label map that is not on its image's grid
  bool json = false;
};

// The pair's volumes as read: orientation overrides applied, the moving label map on its
// image's grid (or resampled with --force), the fixed label map on the fixed grid.
struct PairInputs {
  io::Volume fixed, moving, moving_labels, fixed_labels;
};
PairInputs read_pair_inputs(const RegisterParams& p);

// Registers the pair, warps, writes the outputs (all of them or, on a failure, none) and
// returns the summary: stage times (`times` holds the reading already) and peak memory,
// folding, and the mean Dice over the fixed labels when both label maps are given.
nlohmann::json register_inputs(RegisterParams p, PairInputs in, pipeline::StageTimes& times);

}  // namespace autoreg::apps
