// What `autoreg evaluate` measures, as a library job: per-label Dice and HD95 (mm)
// between a fixed label map and a warped moving one with their means, a displacement
// field's folding, and landmarks' target registration error before and after the field.
// The command line reads the files and prints the report; Python calls the in-memory
// form; both give the same report, whose keys are the command line's --json:
//   labels [{label, dice, hd95_mm}], mean_dice, mean_hd95_mm            (with label maps)
//   non_positive_jacobian_percent, log_jacobian_std                       (with a field)
//   tre {points, before {mean_mm, median_mm, p95_mm, max_mm}, after {…},
//        per_point_mm [{before, after}]}                                  (with landmarks;
//                                                                          after: with a field)
//   contours {structures [{name, compared_with, dice, hd95_mm, …}], mean_dice,
//             mean_hd95_mm}                                               (with structure sets)
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/io/points.h"
#include "autoreg/io/volume.h"

namespace autoreg::pipeline {

struct EvaluateInputs {
  // Label maps on one grid (both or neither); the names are what messages call them.
  std::optional<io::Volume> fixed_labels, warped_labels;
  std::string fixed_labels_name = "the fixed labels", warped_labels_name = "the warped labels";
  std::vector<int64_t> labels;  // the labels scored; empty: every label either map holds but 0
  // A displacement field, 1×3×D×H×W in voxels of `field_grid` (as
  // io::read_displacement_field gives it), on the label maps' grid when both are given.
  at::Tensor field;
  io::Geometry field_grid;
  std::string field_name = "the field";
  // Landmarks (LPS mm), the same points in the same order in each image (both or
  // neither): the fixed ones carried by the field into the moving image.
  std::optional<std::vector<std::array<double, 3>>> fixed_points, moving_points;
  std::string points_name = "the fixed points";
};

// The report (keys above). io::IoError naming the inputs for label maps on different
// grids, a field on another grid, point sets of different sizes or a point outside the
// field; base::UsageError for label maps or points given one without the other.
nlohmann::json evaluate(const EvaluateInputs& in);

// `autoreg evaluate`'s files: the label maps, the field and the landmark files (each
// optional, as the command line takes them).
struct EvaluateJob {
  std::string fixed_labels, warped_labels, field;
  std::vector<int64_t> labels;
  std::string fixed_points, moving_points;
  io::PointFileOptions point_options;  // voxel-index landmarks: their grid and base
  // Two RT Structure Sets on the DICOM series `series` (a folder): the report's
  // "contours", per structure (contours_job.h: compare_structure_sets).
  std::string fixed_contours, warped_contours, series;
};
nlohmann::json evaluate_files(const EvaluateJob& job);

}  // namespace autoreg::pipeline
