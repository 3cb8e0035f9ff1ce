#include "autoreg/pair/evaluate_job.h"

#include <ATen/ATen.h>

#include <cmath>

#include "autoreg/base/errors.h"
#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/pair/contours_job.h"
#include "autoreg/pair/pair_checks.h"
#include "autoreg/registration/metrics.h"

namespace autoreg::pipeline {
namespace {

nlohmann::json error_summary(const io::PointErrors& e) {
  return {{"mean_mm", e.mean}, {"median_mm", e.median}, {"p95_mm", e.p95}, {"max_mm", e.max}};
}

// TRE of the fixed points carried by the field (none: the identity) to the moving ones.
nlohmann::json point_errors(const EvaluateInputs& in) {
  const auto& fixed = *in.fixed_points;
  const auto& moving = *in.moving_points;
  if (fixed.size() != moving.size()) {
    throw io::IoError(in.points_name + ": " + std::to_string(fixed.size()) + " points, but their matches hold " +
                      std::to_string(moving.size()));
  }
  const io::PointErrors before = io::point_errors(fixed, moving);
  nlohmann::json out = {{"points", fixed.size()}, {"before", error_summary(before)}};
  if (!in.field.defined()) return out;
  const io::PointErrors after = io::point_errors(io::displace_points(fixed, in.field, in.field_grid, in.points_name), moving);
  out["after"] = error_summary(after);
  out["per_point_mm"] = nlohmann::json::array();
  for (size_t i = 0; i < after.distances.size(); ++i) {
    out["per_point_mm"].push_back({{"before", before.distances[i]}, {"after", after.distances[i]}});
  }
  return out;
}

// Dice and HD95 of each label, and their means.
void label_scores(const EvaluateInputs& in, nlohmann::json& out) {
  const io::Volume& a = *in.fixed_labels;
  const io::Volume& b = *in.warped_labels;
  if (!io::same_grid(a.geometry, b.geometry)) {
    throw io::IoError(in.warped_labels_name + ": not on the grid of " + in.fixed_labels_name +
                      " (apply the field with autoreg apply --interpolation nearest first)");
  }
  const auto& s = a.geometry.spacing;
  const std::array<double, 3> spacing_dhw = {s[2], s[1], s[0]};
  const std::vector<int64_t> labels = in.labels.empty() ? registration::labels_present(a.data, b.data) : in.labels;
  out["labels"] = nlohmann::json::array();
  double dice_sum = 0, hd_sum = 0;
  int hd_count = 0;
  for (int64_t l : labels) {
    const double d = registration::dice(a.data, b.data, l);
    const double h = registration::hd95(a.data, b.data, l, spacing_dhw);
    dice_sum += d;
    if (!std::isnan(h)) {
      hd_sum += h;
      ++hd_count;
    }
    out["labels"].push_back({{"label", l}, {"dice", d}, {"hd95_mm", finite_or_null(h)}});
  }
  out["mean_dice"] = labels.empty() ? nlohmann::json(nullptr) : nlohmann::json(dice_sum / double(labels.size()));
  out["mean_hd95_mm"] = hd_count ? nlohmann::json(hd_sum / hd_count) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json evaluate(const EvaluateInputs& in) {
  if (in.fixed_labels.has_value() != in.warped_labels.has_value()) {
    throw base::UsageError("the fixed and the warped label maps go together");
  }
  if (in.fixed_points.has_value() != in.moving_points.has_value()) {
    throw base::UsageError("the fixed and the moving points go together");
  }
  nlohmann::json out;
  if (in.fixed_points) out["tre"] = point_errors(in);
  if (in.fixed_labels) {
    label_scores(in, out);
    if (in.field.defined() && !io::same_grid(in.field_grid, in.fixed_labels->geometry)) {
      throw io::IoError(in.field_name + ": the field's grid differs from " + in.fixed_labels_name + "'s");
    }
  }
  if (in.field.defined()) {
    const auto j = registration::jacobian_stats(in.field);
    out["non_positive_jacobian_percent"] = j.non_positive_percent;
    out["log_jacobian_std"] = j.log_std;
  }
  return out;
}

nlohmann::json evaluate_files(const EvaluateJob& job) {
  EvaluateInputs in;
  in.labels = job.labels;
  if (!job.field.empty()) {
    in.field = io::read_displacement_field(job.field, &in.field_grid);
    in.field_name = job.field;
  }
  if (!job.fixed_points.empty()) {
    const io::Landmarks l = io::read_landmarks(job.fixed_points, job.moving_points, job.point_options);
    in.fixed_points = l.fixed.points;
    in.moving_points = l.moving.points;
    in.points_name = job.fixed_points;
  }
  if (!job.fixed_labels.empty()) {
    in.fixed_labels = io::read_volume(job.fixed_labels, io::PixelKind::Labels);
    in.warped_labels = io::read_volume(job.warped_labels, io::PixelKind::Labels);
    in.fixed_labels_name = job.fixed_labels;
    in.warped_labels_name = job.warped_labels;
  }
  nlohmann::json out = evaluate(in);
  if (!job.fixed_contours.empty()) out["contours"] = compare_structure_sets(job.fixed_contours, job.warped_contours, job.series);
  return out;
}

}  // namespace autoreg::pipeline
