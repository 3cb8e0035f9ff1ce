// autoreg evaluate --fixed-labels A --warped-labels B [--field D] [--labels LIST]
//                  [--fixed-points P --moving-points Q [--points-grid IMG] [--points-index-base 0|1]]
//                  [--json | --csv]
//
// Per-label Dice and HD95 (mm) between the fixed label map and the warped moving one,
// their means, and, with --field, the folding (percentage of voxels with a
// non-positive Jacobian determinant) and the standard deviation of log det. With point
// sets, the target registration error: each fixed point carried by the field into the
// moving image (x + d(x)) against its match, before and after.
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/points.h"
#include "autoreg/io/volume.h"
#include "autoreg/registration/metrics.h"
#include "common_args.h"
#include "exit_codes.h"
#include "options.h"

namespace autoreg::apps {
namespace {

struct EvaluateParams {
  std::string fixed_labels, warped_labels, field, labels, format = "text";
  std::string fixed_points, moving_points;  // TRE
  io::PointFileOptions point_options;      // voxel indices: their grid and base
};

std::vector<int64_t> parse_labels(const std::string& list) {
  return parse_int_list("--labels", list);
}

nlohmann::json number(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

nlohmann::json error_summary(const io::PointErrors& e) {
  return {{"mean_mm", e.mean}, {"median_mm", e.median}, {"p95_mm", e.p95}, {"max_mm", e.max}};
}

// TRE of the fixed points carried by the field (none: the identity) to the moving ones.
nlohmann::json point_errors(const EvaluateParams& p, const at::Tensor& u, const io::Geometry& grid) {
  const io::Landmarks l = io::read_landmarks(p.fixed_points, p.moving_points, p.point_options);
  const io::PointErrors before = io::point_errors(l.fixed.points, l.moving.points);
  nlohmann::json out = {{"points", l.fixed.points.size()}, {"before", error_summary(before)}};
  if (!u.defined()) return out;
  const io::PointErrors after = io::point_errors(io::displace_points(l.fixed.points, u, grid, p.fixed_points), l.moving.points);
  out["after"] = error_summary(after);
  out["per_point_mm"] = nlohmann::json::array();
  for (size_t i = 0; i < after.distances.size(); ++i) {
    out["per_point_mm"].push_back({{"before", before.distances[i]}, {"after", after.distances[i]}});
  }
  return out;
}

nlohmann::json evaluate(const EvaluateParams& p) {
  nlohmann::json out;
  at::Tensor u;
  io::Geometry grid;
  if (!p.field.empty()) u = io::read_displacement_field(p.field, &grid);
  if (!p.fixed_points.empty()) out["tre"] = point_errors(p, u, grid);
  if (p.fixed_labels.empty()) {
    if (u.defined()) {
      const auto j = registration::jacobian_stats(u);
      out["non_positive_jacobian_percent"] = j.non_positive_percent;
      out["log_jacobian_std"] = j.log_std;
    }
    return out;
  }
  const io::Volume a = io::read_volume(p.fixed_labels, io::PixelKind::Labels);
  const io::Volume b = io::read_volume(p.warped_labels, io::PixelKind::Labels);
  if (!io::same_grid(a.geometry, b.geometry)) {
    throw io::IoError(p.warped_labels + ": not on the grid of " + p.fixed_labels +
                      " (apply the field with autoreg apply --interpolation nearest first)");
  }
  const auto& s = a.geometry.spacing;
  const std::array<double, 3> spacing_dhw = {s[2], s[1], s[0]};
  const std::vector<int64_t> labels =
      p.labels.empty() ? registration::labels_present(a.data, b.data) : parse_labels(p.labels);
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
    out["labels"].push_back({{"label", l}, {"dice", d}, {"hd95_mm", number(h)}});
  }
  out["mean_dice"] = labels.empty() ? nlohmann::json(nullptr) : nlohmann::json(dice_sum / labels.size());
  out["mean_hd95_mm"] = hd_count ? nlohmann::json(hd_sum / hd_count) : nlohmann::json(nullptr);
  if (u.defined()) {
    if (!io::same_grid(grid, a.geometry)) {
      throw io::IoError(p.field + ": the field's grid differs from " + p.fixed_labels + "'s");
    }
    const auto j = registration::jacobian_stats(u);
    out["non_positive_jacobian_percent"] = j.non_positive_percent;
    out["log_jacobian_std"] = j.log_std;
  }
  return out;
}

void print_points(const nlohmann::json& t, const std::string& format) {
  if (format == "csv") {
    std::printf("point,before_mm,after_mm\n");
    for (size_t i = 0; i < t["per_point_mm"].size(); ++i) {
      const auto& d = t["per_point_mm"][i];
      std::printf("%zu,%.6f,%.6f\n", i + 1, d["before"].get<double>(), d["after"].get<double>());
    }
    return;
  }
  std::printf("%-22s %9s %9s %9s %9s\n", "TRE (mm)", "mean", "median", "95th", "max");
  for (const char* when : {"before", "after"}) {
    if (!t.contains(when)) continue;
    const auto& e = t[when];
    std::printf("%-22s %9.3f %9.3f %9.3f %9.3f\n", (std::string(when) + ", " + std::to_string(t["points"].get<size_t>()) + " points").c_str(),
                e["mean_mm"].get<double>(), e["median_mm"].get<double>(), e["p95_mm"].get<double>(), e["max_mm"].get<double>());
  }
}

void print(const nlohmann::json& r, const std::string& format) {
  if (format == "json") {
    std::printf("%s\n", r.dump(2).c_str());
    return;
  }
  if (r.contains("tre")) print_points(r["tre"], format);
  if (r.contains("labels")) {
    auto num = [](const nlohmann::json& v) { return v.is_null() ? std::string("nan") : std::to_string(v.get<double>()); };
    if (format == "csv") {
      std::printf("label,dice,hd95_mm\n");
      for (const auto& l : r["labels"]) {
        std::printf("%ld,%s,%s\n", long(l["label"].get<int64_t>()), num(l["dice"]).c_str(), num(l["hd95_mm"]).c_str());
      }
      std::printf("mean,%s,%s\n", num(r["mean_dice"]).c_str(), num(r["mean_hd95_mm"]).c_str());
      return;
    }
    std::printf("%8s %8s %10s\n", "label", "Dice", "HD95 (mm)");
    for (const auto& l : r["labels"]) {
      std::printf("%8ld %8.4f %10s\n", long(l["label"].get<int64_t>()), l["dice"].get<double>(),
                  num(l["hd95_mm"]).c_str());
    }
    std::printf("%8s %8s %10s\n", "mean", num(r["mean_dice"]).c_str(), num(r["mean_hd95_mm"]).c_str());
  }
  if (format != "csv" && r.contains("non_positive_jacobian_percent")) {
    std::printf("non-positive Jacobian: %.4f %% of voxels; std of log Jacobian: %.4f\n",
                r["non_positive_jacobian_percent"].get<double>(), r["log_jacobian_std"].get<double>());
  }
}

}  // namespace

int run_evaluate(int argc, char** argv) {
  TCLAP::CmdLine cmd("Overlap (Dice), surface distance (HD95, mm), landmark error (TRE, mm) and field regularity "
                     "of a registration result.", ' ', "0.1");
  TCLAP::ValueArg<std::string> fixed("", "fixed-labels", "fixed image's label map", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> warped("", "warped-labels", "moving label map warped onto the fixed grid", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> field("", "field", "displacement field (fixed grid, LPS mm): report folding, and carry --fixed-points into the moving image", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> labels("", "labels", "labels to evaluate, e.g. 2,4,17 (default: all present but 0)", false, "", "LIST", cmd);
  TCLAP::ValueArg<std::string> fixed_points("", "fixed-points", "landmarks of the fixed image (.csv LPS as ANTs, elastix .txt/.pts, .vtk, Slicer .fcsv/.mrk.json, or a voxel-index list)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving_points("", "moving-points", "the same landmarks, in the same order, in the moving image", false, "", "FILE", cmd);
  PointIndexArgs point_index(cmd);
  TCLAP::SwitchArg json("", "json", "print JSON (with each point's error)", cmd, false);
  TCLAP::SwitchArg csv("", "csv", "print CSV", cmd, false);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);
  if (json.isSet() && csv.isSet()) throw UsageError("--json and --csv exclude each other");
  if (fixed.isSet() != warped.isSet()) throw UsageError("--fixed-labels and --warped-labels go together");
  if (fixed_points.isSet() != moving_points.isSet()) throw UsageError("--fixed-points and --moving-points go together");
  if (!fixed.isSet() && !fixed_points.isSet()) {
    throw UsageError("nothing to evaluate: give --fixed-labels and --warped-labels, or --fixed-points and --moving-points");
  }
  if (csv.isSet() && fixed.isSet() && fixed_points.isSet()) throw UsageError("--csv prints one table: labels or points, not both");
  if (csv.isSet() && fixed_points.isSet() && !field.isSet()) throw UsageError("--csv of points needs --field (the errors after)");
  EvaluateParams p{fixed.getValue(), warped.getValue(), field.getValue(), labels.getValue(),
                   json.isSet() ? "json" : (csv.isSet() ? "csv" : "text"), fixed_points.getValue(), moving_points.getValue(), {}};
  if (!p.labels.empty()) parse_labels(p.labels);  // usage errors before any reading
  p.point_options = point_index.options();
  print(evaluate(p), p.format);
  return kOk;
}

}  // namespace autoreg::apps
