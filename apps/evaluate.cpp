// autoreg evaluate --fixed-labels A --warped-labels B [--field D] [--labels LIST]
//                  [--fixed-points P --moving-points Q [--points-grid IMG] [--points-index-base 0|1]]
//                  [--fixed-contours RS.dcm --warped-contours RS2.dcm --series DIR]
//                  [--json | --csv]
//
// Per-label Dice and HD95 (mm) between the fixed label map and the warped moving one,
// their means, and, with --field, the folding (percentage of voxels with a
// non-positive Jacobian determinant) and the standard deviation of log det. With point
// sets, the target registration error: each fixed point carried by the field into the
// moving image (x + d(x)) against its match, before and after.
#include <tclap/CmdLine.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "autoreg/base/csv.h"
#include "autoreg/pipeline/evaluate_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"

namespace autoreg::apps {
namespace {

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

std::string number_or_nan(const nlohmann::json& v) { return v.is_null() ? std::string("nan") : std::to_string(v.get<double>()); }

// One line per structure of the warped structure set (--warped-contours).
void print_structures(const nlohmann::json& c, const std::string& format) {
  if (format == "csv") {
    std::printf("structure,compared_with,dice,hd95_mm\n");
  } else {
    std::printf("%-24s %-24s %8s %10s\n", "structure", "compared with", "Dice", "HD95 (mm)");
  }
  for (const auto& s : c["structures"]) {
    const std::string name = s["name"].get<std::string>();
    const std::string with = s["compared_with"].is_null() ? "" : s["compared_with"].get<std::string>();
    const std::string dice = s.contains("dice") ? number_or_nan(s["dice"]) : "nan";
    const std::string hd = s.contains("hd95_mm") ? number_or_nan(s["hd95_mm"]) : "nan";
    if (format == "csv") {
      std::printf("%s,%s,%s,%s\n", base::csv_field(name).c_str(), base::csv_field(with).c_str(), dice.c_str(), hd.c_str());
    } else {
      std::printf("%-24s %-24s %8.8s %10.10s\n", name.c_str(), with.empty() ? "(no match)" : with.c_str(), dice.c_str(),
                  hd.c_str());
    }
  }
  if (format == "csv") {
    std::printf("mean,,%s,%s\n", number_or_nan(c["mean_dice"]).c_str(), number_or_nan(c["mean_hd95_mm"]).c_str());
  } else {
    std::printf("%-24s %-24s %8.8s %10.10s\n", "mean", "", number_or_nan(c["mean_dice"]).c_str(),
                number_or_nan(c["mean_hd95_mm"]).c_str());
  }
}

void print(const nlohmann::json& r, const std::string& format) {
  if (format == "json") {
    std::printf("%s\n", r.dump(2).c_str());
    return;
  }
  if (r.contains("tre")) print_points(r["tre"], format);
  if (r.contains("contours")) print_structures(r["contours"], format);
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
  TCLAP::ValueArg<std::string> fixed_contours("", "fixed-contours", "an RT Structure Set drawn on the DICOM series --series (the expert's): the reference", false, "", "RS.dcm", cmd);
  TCLAP::ValueArg<std::string> warped_contours("", "warped-contours", "an RT Structure Set on the same series (carried by register --out-contours or apply --contours): each structure's Dice and HD95 against the reference's of the same name", false, "", "RS.dcm", cmd);
  TCLAP::ValueArg<std::string> series("", "series", "with --fixed-contours: the DICOM series folder both structure sets are drawn on", false, "", "DIR", cmd);
  TCLAP::SwitchArg json("", "json", "print JSON (with each point's error)", cmd, false);
  TCLAP::SwitchArg csv("", "csv", "print CSV", cmd, false);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  if (json.isSet() && csv.isSet()) throw UsageError("--json and --csv exclude each other");
  if (fixed.isSet() != warped.isSet()) throw UsageError("--fixed-labels and --warped-labels go together");
  if (fixed_points.isSet() != moving_points.isSet()) throw UsageError("--fixed-points and --moving-points go together");
  if (fixed_contours.isSet() != warped_contours.isSet() || fixed_contours.isSet() != series.isSet()) {
    throw UsageError("--fixed-contours, --warped-contours and --series go together (two structure sets and the series they are drawn on)");
  }
  if (!fixed.isSet() && !fixed_points.isSet() && !fixed_contours.isSet()) {
    throw UsageError("nothing to evaluate: give --fixed-labels and --warped-labels, --fixed-points and --moving-points, "
                     "or --fixed-contours, --warped-contours and --series");
  }
  if (csv.isSet() && int(fixed.isSet()) + int(fixed_points.isSet()) + int(fixed_contours.isSet()) > 1) {
    throw UsageError("--csv prints one table: labels, points or structures");
  }
  if (csv.isSet() && fixed_points.isSet() && !field.isSet()) throw UsageError("--csv of points needs --field (the errors after)");
  pipeline::EvaluateJob job;
  job.fixed_labels = fixed.getValue();
  job.warped_labels = warped.getValue();
  job.field = field.getValue();
  if (!labels.getValue().empty()) job.labels = parse_int_list("--labels", labels.getValue());  // usage errors before any reading
  job.fixed_points = fixed_points.getValue();
  job.moving_points = moving_points.getValue();
  job.point_options = point_index.options();
  job.fixed_contours = fixed_contours.getValue();
  job.warped_contours = warped_contours.getValue();
  job.series = series.getValue();
  print(pipeline::evaluate_files(job), json.isSet() ? "json" : (csv.isSet() ? "csv" : "text"));
  return kOk;
}

}  // namespace autoreg::apps
