// The search's HTML report: built from a synthetic log and summary, checked for what a
// reader of the page relies on (one document, every edge and operation named, the 12
// small multiples with 8 lines each, no NaN in the drawing, escaped text) and for the
// degenerate inputs a killed or fresh search leaves behind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "autoreg/qc/search_report.h"
#include "autoreg/qc/template_report.h"

namespace autoreg::qc {
namespace {

using nlohmann::json;

const std::vector<std::string> kEdgeNames = {"F0", "F1", "F2", "F3", "F4", "F5",
                                             "D4_0", "D4_1", "D4_2", "D2_0", "D2_1", "D2_2"};
const std::vector<std::string> kOperationNames = {"conv_1x1", "conv_3x3", "conv_5x5", "sep_conv_3x3",
                                                  "sep_conv_5x5", "dil_conv_3x3", "dil_conv_5x5",
                                                  "dil_conv_7x7"};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The <svg>…</svg> elements of a page, in order.
std::vector<std::string> svgs(const std::string& page) {
  std::vector<std::string> out;
  for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) {
    const size_t end = page.find("</svg>", at);
    if (end == std::string::npos) break;
    out.push_back(page.substr(at, end - at));
  }
  return out;
}

// Softmax of logits that drift over the steps so that operation (edge mod 8) wins.
std::vector<double> row(int edge, int step) {
  std::vector<double> p(8);
  double sum = 0;
  for (int o = 0; o < 8; ++o) {
    p[o] = std::exp((o == edge % 8 ? 0.08 : 0.0) * step + 0.01 * o);
    sum += p[o];
  }
  for (double& v : p) v /= sum;
  return p;
}

// 50 steps: 10 of warm-up (α and λ still), then search; validation every 10 steps.
std::vector<json> synthetic_log(int steps = 50) {
  std::vector<json> log;
  for (int step = 1; step <= steps; ++step) {
    json line;
    line["step"] = step;
    line["seconds"] = 2.5 * step;
    line["phase"] = step <= 10 ? "warmup" : "search";
    line["loss"] = 1.0 / step;
    const int moved = std::max(0, step - 10);
    line["lambda"] = {{"ncc9", 1.0 + 0.02 * moved}, {"ncc7_half", 1.0}, {"ncc5_quarter", 1.0 - 0.01 * moved},
                      {"mind", 0.5}, {"smoothness", 0.05 + 0.1 * moved}};
    json probabilities = json::array(), entropy = json::array();
    for (int e = 0; e < 12; ++e) {
      const auto p = row(e, moved);
      double h = 0;
      for (double v : p) h -= v * std::log(v);
      probabilities.push_back(p);
      entropy.push_back(h);
    }
    line["probabilities"] = probabilities;
    line["entropy"] = entropy;
    line["predicted_ms"] = 40.0 - 0.3 * moved;
    line["genotype"] = "conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 "
                       "conv_3x3 conv_3x3 conv_3x3";
    if (step % 10 == 0) line["validation_dice"] = 0.6 + 0.004 * step;
    log.push_back(line);
  }
  return log;
}

json synthetic_summary() {
  json s;
  std::vector<std::string> genotype;
  json probabilities = json::array();
  for (int e = 0; e < 12; ++e) {
    genotype.push_back(kOperationNames[e % 8]);
    probabilities.push_back(row(e, 40));
  }
  s["genotype"] = genotype;
  s["edges"] = kEdgeNames;
  s["operations"] = kOperationNames;
  s["searched"] = std::vector<bool>{false, false, false, false, false, false, true, true, true, true, true, true};
  s["probabilities"] = probabilities;
  s["entropy_start"] = std::vector<double>(12, std::log(8.0));
  s["entropy_end"] = std::vector<double>(12, 1.2);
  s["lambda"] = {{"ncc9", 1.8}, {"ncc7_half", 1.0}, {"ncc5_quarter", 0.6}, {"mind", 0.5}, {"smoothness", 4.05}};
  s["predicted_forward_ms"] = 28.0;
  s["measured_forward_ms"] = 31.5;
  s["budget_ms"] = 35.0;
  s["grid"] = {160, 192, 224};
  s["spacing_mm"] = 1.0;
  s["steps"] = 50;
  s["search_seconds"] = 125.0;
  s["validation_dice"] = 0.8;
  s["seed"] = 7;
  s["mode"] = "joint";
  s["order"] = "first";
  s["edges_searched"] = "deformation";
  return s;
}

// What every rendered page must satisfy, whatever went in.
void expect_well_formed(const std::string& page) {
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(page, "<html"), 1u);
  EXPECT_EQ(count(page, "</html>"), 1u);
  EXPECT_EQ(count(page, "<svg"), count(page, "</svg>"));
  for (const std::string& svg : svgs(page)) {
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg.substr(0, 200);
    EXPECT_EQ(svg.find("NaN"), std::string::npos) << svg.substr(0, 200);
    EXPECT_EQ(svg.find("inf"), std::string::npos) << svg.substr(0, 200);
  }
}

TEST(Report, NamesEveryEdgeAndOperationAndDrawsTheSmallMultiples) {
  json summary = synthetic_summary();
  summary["seed"] = 20240917;  // integers are shown in full, not to a few digits
  const std::string page = render_search_report(synthetic_log(), summary);
  expect_well_formed(page);
  EXPECT_NE(page.find(">20240917<"), std::string::npos);
  for (const std::string& e : kEdgeNames) EXPECT_NE(page.find(">" + e + "<"), std::string::npos) << e;
  for (const std::string& o : kOperationNames) EXPECT_NE(page.find(o), std::string::npos) << o;

  // One chart per edge, one line per operation in each.
  size_t edge_charts = 0, alpha_lines = 0;
  for (const std::string& svg : svgs(page)) {
    if (svg.find("edge-chart") == std::string::npos) continue;
    ++edge_charts;
    alpha_lines += count(svg, "<polyline");
  }
  EXPECT_EQ(edge_charts, 12u);
  EXPECT_EQ(alpha_lines, 12u * 8u);
  // The six feature-cell edges are not searched in this summary.
  EXPECT_EQ(count(page, "<tspan class=\"note\"> · fixed</tspan>"), 6u);
  // The end of warm-up (step 11) is marked in the four plots over steps.
  EXPECT_EQ(count(page, "class=\"vmark\""), 12u + 3u);
  // Plot 4 carries the 35 ms budget.
  EXPECT_NE(page.find("budget 35 ms"), std::string::npos);
  // λ spans 0.05…5.05, more than a decade: a log axis.
  EXPECT_NE(page.find("(log scale)"), std::string::npos);
}

// The charts' page carries their style (without it a browser fills each chart's frame
// black and draws its labels too large for the margins: the template page did both).
TEST(Report, PagesWithChartsCarryTheirStyle) {
  const std::string search = render_search_report(synthetic_log(), synthetic_summary());
  json summary = {{"subjects", 3}, {"seconds", 12.5}, {"settings", {{"step", 0.25}}},
                  {"final_similarity", {{"a", 0.91}, {"b", 0.87}, {"c", 0.89}}}, {"iterations", json::array()}};
  for (int t = 1; t <= 3; ++t) {
    summary["iterations"].push_back({{"iteration", t}, {"update_mm", t == 1 ? 28.7 : 0.25}, {"update_max_mm", 50.0},
                                     {"similarity", 0.86 + 0.01 * t}, {"seconds", 70.0},
                                     {"picture", "iterations/template_" + std::to_string(t) + ".png"}});
  }
  const std::string templ = render_template_report(summary);
  expect_well_formed(templ);
  for (const std::string* page : {&search, &templ}) {
    EXPECT_NE(page->find("svg .ticks line, svg .frame { stroke: #999; fill: none; }"), std::string::npos);
    EXPECT_NE(page->find("svg text { font: 11px sans-serif; }"), std::string::npos);
  }
  // The first update (28.7 mm, to the subjects' mean pose) beside 0.25 mm: a log axis.
  EXPECT_NE(templ.find("log scale)"), std::string::npos);
  // Worst fit first.
  EXPECT_LT(templ.find(">b<"), templ.find(">c<"));
  EXPECT_LT(templ.find(">c<"), templ.find(">a<"));
}

TEST(Report, EscapesTextFromTheSummary) {
  json summary = synthetic_summary();
  summary["mode"] = "<script>alert(\"x\") & more</script>";
  const std::string page = render_search_report(synthetic_log(5), summary);
  expect_well_formed(page);
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(&quot;x&quot;) &amp; more&lt;/script&gt;"), std::string::npos);
}

TEST(Report, RejectsASummaryWithoutItsNames) {
  for (const char* key : {"genotype", "edges", "operations"}) {
    json summary = synthetic_summary();
    summary.erase(key);
    EXPECT_THROW(render_search_report(synthetic_log(3), summary), std::invalid_argument) << key;
  }
  json short_edges = synthetic_summary();
  short_edges["edges"].erase(11);
  EXPECT_THROW(render_search_report({}, short_edges), std::invalid_argument);
  json numbers = synthetic_summary();
  numbers["operations"][3] = 3;
  EXPECT_THROW(render_search_report({}, numbers), std::invalid_argument);
  EXPECT_THROW(render_search_report({}, json::array()), std::invalid_argument);
}

TEST(Report, RendersAnEmptyLogAndASingleLine) {
  const std::string empty = render_search_report({}, synthetic_summary());
  expect_well_formed(empty);
  EXPECT_EQ(count(empty, "edge-chart"), 12u);
  EXPECT_EQ(count(empty, "<polyline"), 0u);
  EXPECT_NE(empty.find("no data"), std::string::npos);

  const std::string one = render_search_report(synthetic_log(1), synthetic_summary());
  expect_well_formed(one);
  EXPECT_EQ(count(one, "<polyline"), 12u * 8u + 5u + 1u);  // α, λ, predicted time; no Dice yet
}

TEST(Report, SkipsMissingNullAndNonFiniteValues) {
  std::vector<json> log = synthetic_log(20);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  log[3]["predicted_ms"] = nan;
  log[4]["lambda"]["mind"] = std::numeric_limits<double>::infinity();
  log[5]["validation_dice"] = nullptr;
  log[6]["probabilities"][2][5] = nan;
  log[7].erase("probabilities");
  log[8].erase("step");
  log[9] = json("not an object");
  log.push_back(json::object());
  // Constant values everywhere: every range is empty and must be widened.
  for (json& line : log) {
    if (line.is_object() && line.contains("lambda")) line["lambda"] = {{"ncc9", 1.0}, {"smoothness", 1.0}};
  }
  json summary = synthetic_summary();
  summary.erase("searched");
  summary.erase("probabilities");
  summary["entropy_end"] = nullptr;
  summary["validation_dice"] = nullptr;
  summary["budget_ms"] = 0;
  const std::string page = render_search_report(log, summary);
  expect_well_formed(page);
  EXPECT_EQ(count(page, "class=\"hmark\""), 0u);  // a budget of 0 is none
  EXPECT_NE(page.find("budget none"), std::string::npos);
  EXPECT_EQ(page.find("(log scale)"), std::string::npos);
}

class ReadJsonLines : public ::testing::Test {
 protected:
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_ = ::testing::TempDir() + "autoreg_report_test.jsonl";
};

TEST_F(ReadJsonLines, SkipsALineCutShort) {
  {
    std::ofstream out(path_);
    out << "{\"step\": 1, \"loss\": 0.5}\n\n{\"step\": 2, \"loss\": 0.4}\r\n{\"step\": 3, \"lo";
  }
  const auto lines = read_json_lines(path_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 1);
  EXPECT_EQ(lines[1]["step"], 2);
}

TEST_F(ReadJsonLines, NamesAFileThatCannotBeOpened) {
  const std::string missing = ::testing::TempDir() + "autoreg_no_such_dir/search.log.jsonl";
  try {
    read_json_lines(missing);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace autoreg::qc
