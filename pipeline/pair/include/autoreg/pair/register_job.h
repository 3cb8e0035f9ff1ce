// One pair's registration from files to files: what `autoreg register` runs, and any
// program that registers files the same way. Reads the inputs (orientation overrides,
// label maps checked against their images' grids), registers (register_pair.h), warps,
// writes every output (all of them or, on a failure, none) and returns the summary
// `autoreg register --json` prints. Many pairs: register_pairs.h.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <utility>

#include "autoreg/base/schema.h"
#include "autoreg/io/points.h"
#include "autoreg/io/volume.h"
#include "autoreg/pair/contours_job.h"
#include "autoreg/pair/pair_checks.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/registration/metrics.h"

namespace autoreg::pipeline {

struct RegisterJob {
  std::string fixed, moving;      // the images
  std::string moving_labels;      // optional: warped to out_labels
  std::string fixed_labels;       // optional: the warped labels' Dice against it in the summary
  // optional, together: landmarks of the two images (io/points.h formats), the fixed ones
  // carried into the moving image by the field: the TRE (mm) in the summary
  std::string fixed_points, moving_points;
  // optional: cost-function masks (non-zero inside), each on its image's grid (or
  // resampled by nearest neighbour with `force`): register_pair.h's PairMasks
  std::string fixed_mask, moving_mask;
  // optional: RT Structure Sets (contours_job.h) drawn on the moving series, carried onto
  // the fixed series and written to out_contours; drawn on the fixed series, compared
  std::string moving_contours, fixed_contours, out_contours;
  std::string out_warped, out_field;  // the moving image on the fixed grid; the displacement field (LPS mm)
  std::string out_labels;         // with moving_labels
  std::string out_affine;         // optional: the affine alone (ITK transform file)
  std::string out_inverse_field;  // optional: the map back, on the moving grid (sets options.inverse)
  std::string qc;                 // optional: the QC picture (PNG)
  PairOptions options;            // pair_options(settings): the model, read once
  std::string fixed_orientation, moving_orientation;  // header overrides ("" = trust it)
  bool force = false;             // resample a label map or mask that is not on its image's grid
};

// The pair's volumes as read: orientation overrides applied, the moving label map on its
// image's grid (or resampled with `force`), the fixed label map on the fixed grid, the
// masks on their images' grids (or resampled with `force`) and not empty.
struct PairInputs {
  io::Volume fixed, moving, moving_labels, fixed_labels;
  PairMasks masks;          // with RegisterJob's masks: 1 inside, 0 outside
  io::Landmarks landmarks;  // with RegisterJob's points
  PairContours contours;    // with RegisterJob's contours
};
PairInputs read_pair_inputs(const RegisterJob& job);

// A registered pair in memory: what register_inputs writes.
struct PairOutputs {
  PairResult result;
  io::Volume warped;         // the moving image on the fixed grid
  io::Volume warped_labels;  // with moving labels: the label map on the fixed grid
};

// Registers the pair read and warps the moving image (and labels) through the result:
// all that register_inputs does but write (the Python package's register, in memory).
// The fixed voxels are handed to the registration (in.fixed keeps its grid). Progress
// lines go to stderr when it is a terminal, unless job.options already has callbacks.
PairOutputs register_in_memory(RegisterJob& job, PairInputs& in, StageTimes& times);

// What the summary reports of a registered pair: the inverse's round trip (with an
// inverse), the Jacobian's statistics (the "jacobian" stage of `times`), the Dice with
// both label maps (NaN without), the landmarks' TRE (null without), and the failure
// checks' warnings (pair_checks.h).
struct PairMetrics {
  nlohmann::json inverse, tre;
  registration::JacobianStats jacobian;
  double dice = std::nan("");
  std::vector<PairWarning> warnings;
};
PairMetrics pair_metrics(const RegisterJob& job, const PairInputs& in, const PairOutputs& out, StageTimes& times);

// The summary `autoreg register --json` prints, from the above.
nlohmann::json pair_summary(const RegisterJob& job, const PairOutputs& out, const PairMetrics& metrics,
                            const StageTimes& times);

// Registers the pair read, warps, writes the outputs (all of them or, on a failure,
// none) and returns the summary: stage times (`times` holds the reading already) and
// peak memory, folding, and the mean Dice over the fixed labels when both label maps are
// given. Progress lines go to stderr when it is a terminal.
nlohmann::json register_inputs(RegisterJob job, PairInputs in, StageTimes& times);

// The whole job: the outputs checked writable, the inverse checked possible, the inputs
// read (the "read" stage of `times`), then register_inputs. Throws io::IoError naming
// the file for bad input.
nlohmann::json register_files(const RegisterJob& job, StageTimes& times);

// The rows of a pair's files (base/schema.h): `register`'s options for them.
const base::Schema<RegisterJob>& register_job_schema();
// An orientation code (e.g. LIA) checked for io::with_orientation; "" passes. A
// base::UsageError naming `option` otherwise.
std::string checked_orientation(const std::string& option, const std::string& code);

// The row of a header override (the orientation code, checked when it is read).
template <typename S>
base::SettingField<S> orientation_field(std::string keyword, const std::string& option, std::string help,
                                        std::string S::*member) {
  base::SettingField<S> row = base::text_field<S>(std::move(keyword), option, "CODE", std::move(help), member);
  row.set = [member, o = "--" + option](S& s, const std::string& t) { s.*member = checked_orientation(o, t); };
  return row;
}

}  // namespace autoreg::pipeline
