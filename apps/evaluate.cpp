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
#include <vector>

#include "autoreg/base/csv.h"
#include "autoreg/pair/evaluate_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"
#include "schema_args.h"

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

// What `evaluate` is given: label maps, points or structure sets to score, and how to print.
struct EvaluateCommand {
  pipeline::EvaluateJob job;  // its point_options from point_index
  PointIndex point_index;
  bool json = false, csv = false;
};

base::Schema<EvaluateCommand> evaluate_schema() {
  using C = EvaluateCommand;
  using J = pipeline::EvaluateJob;
  base::Schema<J> files{
      base::text_field<J>("fixed_labels", "fixed-labels", "FILE", "fixed image's label map", &J::fixed_labels),
      base::text_field<J>("warped_labels", "warped-labels", "FILE", "moving label map warped onto the fixed grid",
                          &J::warped_labels),
      base::text_field<J>("field", "field", "FILE",
                          "displacement field (fixed grid, LPS mm): report folding, and carry --fixed-points into the "
                          "moving image",
                          &J::field),
      {"labels", "labels", "LIST", "labels to evaluate, e.g. 2,4,17 (default: all present but 0)",
       [](const J& c) {
         std::string text;
         for (int64_t l : c.labels) text += (text.empty() ? "" : ",") + std::to_string(l);
         return text;
       },
       [](J& c, const std::string& t) {  // a usage error before any reading; "": every label
         c.labels = t.empty() ? std::vector<int64_t>() : parse_int_list("--labels", t);
       }},
      base::text_field<J>("fixed_points", "fixed-points", "FILE",
                          "landmarks of the fixed image (.csv LPS as ANTs, elastix .txt/.pts, .vtk, Slicer "
                          ".fcsv/.mrk.json, or a voxel-index list)",
                          &J::fixed_points),
      base::text_field<J>("moving_points", "moving-points", "FILE",
                          "the same landmarks, in the same order, in the moving image", &J::moving_points)};
  base::Schema<C> rows = base::nested(files, &C::job);
  for (auto& row : base::nested(point_index_schema(), &C::point_index)) rows.push_back(std::move(row));
  base::Schema<J> contours{
      base::text_field<J>("fixed_contours", "fixed-contours", "RS.dcm",
                          "an RT Structure Set drawn on the DICOM series --series (the expert's): the reference",
                          &J::fixed_contours),
      base::text_field<J>("warped_contours", "warped-contours", "RS.dcm",
                          "an RT Structure Set on the same series (carried by register --out-contours or apply "
                          "--contours): each structure's Dice and HD95 against the reference's of the same name",
                          &J::warped_contours),
      base::text_field<J>("series", "series", "DIR",
                          "with --fixed-contours: the DICOM series folder both structure sets are drawn on", &J::series)};
  for (auto& row : base::nested(contours, &C::job)) rows.push_back(std::move(row));
  base::Schema<C> rest{
      base::switch_field<C>("json", "json", "print JSON (with each point's error)", &C::json),
      base::switch_field<C>("csv", "csv", "print CSV", &C::csv)};
  for (auto& row : rest) rows.push_back(std::move(row));
  return rows;
}

// What only the command line can say wrongly: the inputs that go together, one table for CSV.
void check_given(const EvaluateCommand& command) {
  const pipeline::EvaluateJob& c = command.job;
  const bool labels = !c.fixed_labels.empty(), points = !c.fixed_points.empty(), contours = !c.fixed_contours.empty();
  if (command.json && command.csv) throw UsageError("--json and --csv exclude each other");
  if (labels != !c.warped_labels.empty()) throw UsageError("--fixed-labels and --warped-labels go together");
  if (points != !c.moving_points.empty()) throw UsageError("--fixed-points and --moving-points go together");
  if (contours != !c.warped_contours.empty() || contours != !c.series.empty()) {
    throw UsageError("--fixed-contours, --warped-contours and --series go together (two structure sets and the series they are drawn on)");
  }
  if (!labels && !points && !contours) {
    throw UsageError("nothing to evaluate: give --fixed-labels and --warped-labels, --fixed-points and --moving-points, "
                     "or --fixed-contours, --warped-contours and --series");
  }
  if (command.csv && int(labels) + int(points) + int(contours) > 1) {
    throw UsageError("--csv prints one table: labels, points or structures");
  }
  if (command.csv && points && c.field.empty()) throw UsageError("--csv of points needs --field (the errors after)");
}

}  // namespace

int run_evaluate(int argc, char** argv) {
  TCLAP::CmdLine cmd("Overlap (Dice), surface distance (HD95, mm), landmark error (TRE, mm) and field regularity "
                     "of a registration result.", ' ', "0.1");
  const SchemaArgs<EvaluateCommand> options(cmd, evaluate_schema(), EvaluateCommand{});
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  EvaluateCommand c = options.settings(EvaluateCommand{});
  check_given(c);
  c.job.point_options = c.point_index.options();
  print(pipeline::evaluate_files(c.job), c.json ? "json" : (c.csv ? "csv" : "text"));
  return kOk;
}

}  // namespace autoreg::apps
