// The checks that a registration did not fail, label-free, so that no failure is written
// silently as a success (Acme's diagnosis, for registration): the `warnings` of
// `register --json`, a red line in the QC picture and in --pairs' index.html, and with
// --strict the exit code kCheckFailed.
//   worse_than_start  the similarity on what both scans show is worse after registration
//                     than at the headers' alignment (PairResult::loss_before/after), or
//                     nothing of the two overlaps any more
//   affine_limits     the affine turns or scales beyond what the preset allows, or what one
//                     patient's scans allow (scale and shear are no anatomy between them)
//   folding           more than kFoldingLimitPercent of the field's voxels fold
//   second_opinion    evidence the registration did not optimise disagrees: the images'
//                     normalised mutual information (global, where the similarity is local),
//                     on what both show 15 mm or more inside the fields of view's edges,
//                     keeps less than 1 − kSecondOpinionDrop of its information (NMI − 1)
//                     at the headers' alignment (PairResult::mutual_information)
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "autoreg/pair/register_pair.h"

namespace autoreg::pipeline {

struct PairWarning {
  std::string check;         // one of the names above
  std::string message;       // a sentence for a person
  nlohmann::json evidence;   // the figures behind it
};

// What an affine may do under a preset: between subjects (brain) heads tilt and differ
// in size; the same patient's scans (ct-cbct, --rigid, or a pair the images show to be
// one patient's: PairEvidence::same_patient) barely turn and never scale.
AffineLimits affine_limits(const PairOptions& options, bool same_patient = false);

inline constexpr double kFoldingLimitPercent = 1.0;
// How much worse than at the start the similarity loss may end before worse_than_start
// fires (this much of the start's loss, and this much more): a pair aligned to begin
// with ends within noise of its start (a synthetic CT → CBCT pair aligned to the voxel:
// 0.074 → 0.091, the optimiser's first steps), which is no failure; a failure moves the
// loss by far more (a planning CT onto the CBCT's cylinder: the whole image).
inline constexpr double kWorseTolerance = 0.02;

// The second opinion: the joint histogram's bins per image, and the share of the mutual
// information at the headers' alignment a result may lose before second_opinion fires.
inline constexpr int64_t kMutualInformationBins = 32;
inline constexpr double kSecondOpinionDrop = 0.1;

// The rotation angle (degrees) and the singular values of a 4×4 affine's linear part.
struct AffineShape {
  double rotation_degrees = 0;
  std::array<double, 3> scales{1, 1, 1};
  bool reflects = false;
};
AffineShape affine_shape(const at::Tensor& affine);

std::vector<PairWarning> check_pair(const PairOptions& options, const PairResult& result, double folding_percent);

nlohmann::json warnings_json(const std::vector<PairWarning>& warnings);
// A loss as the evidence and summaries give it: null when it is not finite (no overlap).
inline nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
// The warnings in one line for pictures and pages ("" when there are none).
std::string warnings_line(const std::vector<PairWarning>& warnings);

}  // namespace autoreg::pipeline
