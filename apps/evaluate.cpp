// autoreg evaluate --fixed-labels A --warped-labels B [--field D] [--labels LIST]
//                  [--json | --csv]
//
// Per-label Dice and HD95 (mm) between the fixed label map and the warped moving one,
// their means, and, with --field, the folding (percentage of voxels with a
// non-positive Jacobian determinant) and the standard deviation of log det.
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "autoreg/registration/metrics.h"
#include "exit_codes.h"
#include "options.h"

namespace autoreg::apps {
namespace {

struct EvaluateParams {
  std::string fixed_labels, warped_labels, field, labels, format = "text";
};

std::vector<int64_t> parse_labels(const std::string& list) {
  return parse_int_list("--labels", list);
}

nlohmann::json number(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

nlohmann::json evaluate(const EvaluateParams& p) {
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
  nlohmann::json out;
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
  if (!p.field.empty()) {
    io::Geometry grid;
    const at::Tensor u = io::read_displacement_field(p.field, &grid);
    if (!io::same_grid(grid, a.geometry)) {
      throw io::IoError(p.field + ": the field's grid differs from " + p.fixed_labels + "'s");
    }
    const auto j = registration::jacobian_stats(u);
    out["non_positive_jacobian_percent"] = j.non_positive_percent;
    out["log_jacobian_std"] = j.log_std;
  }
  return out;
}

void print(const nlohmann::json& r, const std::string& format) {
  if (format == "json") {
    std::printf("%s\n", r.dump(2).c_str());
    return;
  }
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
  if (r.contains("non_positive_jacobian_percent")) {
    std::printf("non-positive Jacobian: %.4f %% of voxels; std of log Jacobian: %.4f\n",
                r["non_positive_jacobian_percent"].get<double>(), r["log_jacobian_std"].get<double>());
  }
}

}  // namespace

int run_evaluate(int argc, char** argv) {
  TCLAP::CmdLine cmd("Overlap (Dice), surface distance (HD95, mm) and field regularity of a "
                     "registration result.", ' ', "0.1");
  TCLAP::ValueArg<std::string> fixed("", "fixed-labels", "fixed image's label map", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> warped("", "warped-labels", "moving label map warped onto the fixed grid", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> field("", "field", "displacement field: report folding", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> labels("", "labels", "labels to evaluate, e.g. 2,4,17 (default: all present but 0)", false, "", "LIST", cmd);
  TCLAP::SwitchArg json("", "json", "print JSON", cmd, false);
  TCLAP::SwitchArg csv("", "csv", "print CSV", cmd, false);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);
  if (json.isSet() && csv.isSet()) throw UsageError("--json and --csv exclude each other");
  EvaluateParams p{fixed.getValue(), warped.getValue(), field.getValue(), labels.getValue(),
                   json.isSet() ? "json" : (csv.isSet() ? "csv" : "text")};
  if (!p.labels.empty()) parse_labels(p.labels);  // usage errors before any reading
  print(evaluate(p), p.format);
  return kOk;
}

}  // namespace autoreg::apps
