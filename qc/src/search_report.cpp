#include "autoreg/qc/search_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "svg.h"

namespace autoreg::qc {

namespace {

using nlohmann::json;

constexpr size_t kEdges = 12, kOperations = 8;

// The objective's terms in the order the method lists them (a json object would sort them
// alphabetically); any other name a log carries is drawn after these.
const std::vector<std::string> kTerms = {"ncc9", "ncc7_half", "ncc5_quarter", "mind", "smoothness"};

// What each edge maps, in genotype order (registration/genotype.h); "in" is the features
// and cost volume the deformation cell starts from.
const std::array<const char*, kEdges> kChannels = {"1→16 s2", "16→16",  "16→16", "16→32 s2",
                                                   "32→32",   "32→32",  "in→48", "48→32",
                                                   "32→16",   "in→48",  "48→32", "32→16"};

// The names and flags the page is built around, checked once.
struct Shape {
  std::vector<std::string> edges, genotype, operations;
  std::vector<bool> searched;
};

std::optional<double> number(const json& j) {
  if (!j.is_number()) return std::nullopt;
  const double v = j.get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> field(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  return it == object.end() ? std::nullopt : number(*it);
}

// j[a][b] when j is such a nested array of numbers.
std::optional<double> element(const json& j, size_t a, size_t b) {
  if (!j.is_array() || j.size() <= a || !j[a].is_array() || j[a].size() <= b) return std::nullopt;
  return number(j[a][b]);
}

std::optional<double> element(const json& j, size_t a) {
  if (!j.is_array() || j.size() <= a) return std::nullopt;
  return number(j[a]);
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// A table cell from any json value: integers (seed, steps) in full, other numbers to 6
// digits, strings escaped, "—" when absent.
std::string show(const json& j) {
  if (j.is_string()) return svg::escape(j.get<std::string>());
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_number_integer()) return j.dump();
  if (j.is_number()) return svg::label(j.get<double>(), 6);
  return "—";
}

std::vector<std::string> strings(const json& summary, const char* key, size_t count) {
  const json& j = member(summary, key);
  bool ok = j.is_array() && j.size() == count;
  for (size_t i = 0; ok && i < count; ++i) ok = j[i].is_string();
  if (!ok) {
    throw std::invalid_argument("render_search_report: the summary's '" + std::string(key) + "' must be an array of " +
                                std::to_string(count) + " strings, got " +
                                (j.is_null() ? std::string("nothing") : j.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 200)));
  }
  return j.get<std::vector<std::string>>();
}

Shape check(const json& summary) {
  Shape s;
  s.genotype = strings(summary, "genotype", kEdges);
  s.edges = strings(summary, "edges", kEdges);
  s.operations = strings(summary, "operations", kOperations);
  s.searched.assign(kEdges, true);  // a summary without the flags: treat every edge as searched
  const json& searched = member(summary, "searched");
  for (size_t e = 0; e < kEdges && searched.is_array() && e < searched.size(); ++e) {
    if (searched[e].is_boolean()) s.searched[e] = searched[e].get<bool>();
  }
  return s;
}

std::string operation_colour(const Shape& s, const std::string& op) {
  for (size_t o = 0; o < s.operations.size(); ++o) {
    if (s.operations[o] == op) return svg::colour(o);
  }
  return "#999999";
}

// The first step of each phase after the first: where warm-up ends, or sequential mode
// switches from architecture to objective.
std::vector<svg::VerticalMark> phase_changes(const std::vector<json>& log) {
  std::vector<svg::VerticalMark> marks;
  std::string previous;
  for (const json& line : log) {
    const json& phase = member(line, "phase");
    const auto step = field(line, "step");
    if (!phase.is_string() || !step) continue;
    const std::string p = phase.get<std::string>();
    if (!previous.empty() && p != previous) marks.push_back({*step, p});
    previous = p;
  }
  return marks;
}

// Plot 1: one small chart per edge, one line per operation.
std::string probability_charts(const std::vector<json>& log, const Shape& s,
                               const std::vector<svg::VerticalMark>& marks) {
  std::vector<std::vector<svg::Series>> edges(kEdges);
  for (auto& series : edges) {
    for (size_t o = 0; o < kOperations; ++o) series.push_back({s.operations[o], svg::colour(o), {}, false});
  }
  for (const json& line : log) {
    const auto step = field(line, "step");
    const json& p = member(line, "probabilities");
    if (!step || !p.is_array()) continue;
    for (size_t e = 0; e < kEdges; ++e) {
      for (size_t o = 0; o < kOperations; ++o) {
        if (const auto v = element(p, e, o)) edges[e][o].points.emplace_back(*step, *v);
      }
    }
  }
  std::ostringstream html;
  html << "<div class=\"legend\">";
  for (size_t o = 0; o < kOperations; ++o) {
    html << "<span><i class=\"swatch\" style=\"background:" << svg::colour(o) << "\"></i>"
         << svg::escape(s.operations[o]) << "</span>";
  }
  html << "</div>\n<div class=\"small-multiples\">\n";
  for (size_t e = 0; e < kEdges; ++e) {
    svg::ChartOptions o;
    o.title = s.edges[e];
    o.css_class = "chart edge-chart";
    o.width = 262, o.height = 150;
    o.fixed_y = true, o.y_min = 0, o.y_max = 1;
    o.x_ticks = 4, o.y_ticks = 2;
    o.legend = false;
    o.muted = !s.searched[e];
    o.note = s.searched[e] ? "" : "fixed";
    o.vertical = marks;
    html << svg::line_chart(edges[e], o);
  }
  html << "</div>\n";
  return html.str();
}

// Plot 2: the objective weights; a log axis when they span more than a decade.
std::string lambda_chart(const std::vector<json>& log, const json& summary,
                         const std::vector<svg::VerticalMark>& marks) {
  std::vector<std::string> names = kTerms;
  auto add_names = [&](const json& lambda) {
    if (!lambda.is_object()) return;
    for (const auto& item : lambda.items()) {
      if (std::find(names.begin(), names.end(), item.key()) == names.end()) names.push_back(item.key());
    }
  };
  add_names(member(summary, "lambda"));
  for (const json& line : log) add_names(member(line, "lambda"));

  std::vector<svg::Series> series;
  for (size_t i = 0; i < names.size(); ++i) series.push_back({names[i], svg::colour(i), {}, false});
  double lo = INFINITY, hi = -INFINITY;
  for (const json& line : log) {
    const auto step = field(line, "step");
    if (!step) continue;
    for (size_t i = 0; i < names.size(); ++i) {
      if (const auto v = field(member(line, "lambda"), names[i].c_str())) {
        series[i].points.emplace_back(*step, *v);
        lo = std::min(lo, *v), hi = std::max(hi, *v);
      }
    }
  }
  svg::ChartOptions o;
  o.title = "λ, the objective weights";
  o.log_y = lo > 0 && hi > 10 * lo;
  if (o.log_y) o.title += " (log scale)";
  o.vertical = marks;
  return svg::line_chart(series, o);
}

// Plots 3 and 4: one number of the log over the steps.
std::string scalar_chart(const std::vector<json>& log, const char* key, const std::string& title,
                         bool markers, const std::vector<svg::VerticalMark>& marks,
                         std::vector<svg::HorizontalMark> horizontal = {}) {
  svg::Series series{key, svg::colour(0), {}, markers};
  for (const json& line : log) {
    const auto step = field(line, "step"), v = field(line, key);
    if (step && v) series.points.emplace_back(*step, *v);
  }
  svg::ChartOptions o;
  o.title = title;
  o.legend = false;
  o.vertical = marks;
  o.horizontal = std::move(horizontal);
  return svg::line_chart({series}, o);
}

// Plot 5: the cells as chains of boxes, each edge coloured by its operation.
std::string genotype_diagram(const Shape& s) {
  constexpr double kLead = 74, kBox = 112, kGap = 24, kHeight = 54, kRow = 96, kX0 = 10;
  std::ostringstream d;
  d << "<svg class=\"diagram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"920\" height=\"300\" "
       "viewBox=\"0 0 920 300\" role=\"img\" aria-label=\"the derived genotype\">\n"
       "<defs><marker id=\"autoreg-arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"7\" "
       "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0L8,4L0,8z\" fill=\"#666\"/></marker></defs>\n";
  auto box = [&](double x, double y, double w, const std::string& fill, const std::vector<std::string>& lines,
                 bool dashed) {
    d << "<rect class=\"cell-box\" x=\"" << svg::num(x) << "\" y=\"" << svg::num(y) << "\" width=\"" << svg::num(w)
      << "\" height=\"" << svg::num(kHeight) << "\" rx=\"4\" fill=\"" << fill << "\" fill-opacity=\"0.3\" stroke=\""
      << fill << "\"" << (dashed ? " stroke-dasharray=\"4 3\"" : "") << "/>";
    for (size_t i = 0; i < lines.size(); ++i) {
      d << "<text x=\"" << svg::num(x + w / 2) << "\" y=\"" << svg::num(y + 16 + 15.0 * static_cast<double>(i))
        << "\" text-anchor=\"middle\"" << (i == 0 ? " class=\"edge-name\"" : "") << ">" << svg::escape(lines[i])
        << "</text>";
    }
    d << '\n';
  };
  auto arrow = [&](double x0, double x1, double y) {
    d << "<line class=\"arrow\" x1=\"" << svg::num(x0) << "\" x2=\"" << svg::num(x1 - 1) << "\" y1=\"" << svg::num(y)
      << "\" y2=\"" << svg::num(y) << "\" marker-end=\"url(#autoreg-arrow)\"/>\n";
  };
  // A row: a title, a lead box, the cell's edges [first, last), and an optional tail box.
  auto row = [&](double y, const std::string& title, const std::string& lead, size_t first, size_t last,
                 const std::string& tail) {
    d << "<text class=\"title\" x=\"" << svg::num(kX0) << "\" y=\"" << svg::num(y - 8) << "\">" << svg::escape(title)
      << "</text>\n";
    box(kX0, y, kLead, "#999999", {lead}, false);
    double x = kX0 + kLead;
    for (size_t e = first; e < last; ++e) {
      arrow(x, x + kGap, y + kHeight / 2);
      const std::string note = std::string(kChannels[e]) + (s.searched[e] ? "" : " · fixed");
      box(x + kGap, y, kBox, operation_colour(s, s.genotype[e]), {s.edges[e], s.genotype[e], note}, !s.searched[e]);
      x += kGap + kBox;
    }
    if (!tail.empty()) {
      arrow(x, x + kGap, y + kHeight / 2);
      box(x + kGap, y, 2 * kBox - 40, "#999999", {tail}, false);
    }
  };
  row(28, "F, the feature cell (each image)", "image", 0, 6, "");
  row(28 + kRow, "D at 1/4 scale", "in", 6, 9, "flow head + integrate");
  row(28 + 2 * kRow, "D at 1/2 scale", "in", 9, 12, "flow head + integrate");
  d << "</svg>\n";
  return d.str();
}

std::string summary_tables(const std::vector<json>& log, const json& summary, const Shape& s) {
  std::ostringstream t;
  t << "<div class=\"tables\">\n<table class=\"genotype\"><caption>Genotype</caption>\n"
       "<tr><th>edge</th><th>operation</th><th>p</th><th></th></tr>\n";
  const json& probabilities = member(summary, "probabilities");
  for (size_t e = 0; e < kEdges; ++e) {
    std::optional<double> p;
    for (size_t o = 0; o < kOperations; ++o) {
      if (s.operations[o] == s.genotype[e]) p = element(probabilities, e, o);
    }
    t << "<tr><td>" << svg::escape(s.edges[e]) << "</td><td><i class=\"swatch\" style=\"background:"
      << operation_colour(s, s.genotype[e]) << "\"></i>" << svg::escape(s.genotype[e]) << "</td><td class=\"num\">"
      << (p ? svg::label(*p, 3) : "—") << "</td><td>" << (s.searched[e] ? "searched" : "fixed") << "</td></tr>\n";
  }
  t << "</table>\n<table class=\"run\"><caption>Run</caption>\n";
  auto row = [&](const std::string& name, const std::string& value) {
    t << "<tr><th>" << name << "</th><td>" << value << "</td></tr>\n";
  };
  const json& lambda = member(summary, "lambda");
  for (const std::string& name : kTerms) row("λ " + svg::escape(name), show(member(lambda, name.c_str())));
  if (lambda.is_object()) {
    for (const auto& item : lambda.items()) {
      if (std::find(kTerms.begin(), kTerms.end(), item.key()) == kTerms.end())
        row("λ " + svg::escape(item.key()), show(item.value()));
    }
  }
  const auto budget = field(summary, "budget_ms");
  row("forward time (ms)", "predicted " + show(member(summary, "predicted_forward_ms")) + ", measured " +
                               show(member(summary, "measured_forward_ms")) + ", budget " +
                               (budget && *budget > 0 ? svg::label(*budget) : std::string("none")));
  std::string grid;
  const json& g = member(summary, "grid");
  for (size_t i = 0; g.is_array() && i < g.size(); ++i) grid += (i ? "×" : "") + show(g[i]);
  row("grid, spacing (mm)", (grid.empty() ? "—" : grid) + ", " + show(member(summary, "spacing_mm")));
  row("steps", show(member(summary, "steps")));
  row("search time (s)", show(member(summary, "search_seconds")));
  row("validation Dice", show(member(summary, "validation_dice")));
  row("seed", show(member(summary, "seed")));
  row("mode, order", show(member(summary, "mode")) + ", " + show(member(summary, "order")));
  row("edges searched", show(member(summary, "edges_searched")));
  std::optional<double> rollbacks;
  for (const json& line : log) {
    if (const auto r = field(line, "rollbacks")) rollbacks = r;
  }
  if (rollbacks) row("rollbacks", svg::label(*rollbacks));
  t << "</table>\n<table class=\"entropy\"><caption>Entropy per edge (nats; at most ln 8 = "
    << svg::label(std::log(static_cast<double>(kOperations)), 4) << ")</caption>\n"
    << "<tr><th>edge</th><th>start</th><th>end</th></tr>\n";
  for (size_t e = 0; e < kEdges; ++e) {
    const auto a = element(member(summary, "entropy_start"), e), b = element(member(summary, "entropy_end"), e);
    t << "<tr><td>" << svg::escape(s.edges[e]) << "</td><td class=\"num\">" << (a ? svg::label(*a, 4) : "—")
      << "</td><td class=\"num\">" << (b ? svg::label(*b, 4) : "—") << "</td></tr>\n";
  }
  t << "</table>\n</div>\n";
  return t.str();
}

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; color: #222; margin: 24px; max-width: 1100px; }
h2 { font-size: 1.1em; margin: 28px 0 6px; }
table { border-collapse: collapse; }
caption { text-align: left; font-weight: 600; padding-bottom: 4px; }
th, td { padding: 2px 10px 2px 0; border-bottom: 1px solid #e4e4e4; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.tables { display: flex; flex-wrap: wrap; gap: 36px; align-items: flex-start; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }
.legend span { margin-right: 16px; white-space: nowrap; }
.small-multiples { display: flex; flex-wrap: wrap; gap: 4px; margin-top: 6px; }
svg .arrow { stroke: #666; stroke-width: 1.5; }
svg .edge-name { font-weight: 600; }
)";

}  // namespace

std::string render_search_report(const std::vector<json>& log, const json& summary) {
  const Shape s = check(summary);
  const auto marks = phase_changes(log);
  std::vector<svg::HorizontalMark> budget;
  if (const auto b = field(summary, "budget_ms"); b && *b > 0) budget.push_back({*b, "budget " + svg::label(*b) + " ms"});

  std::string genotype;
  for (const std::string& op : s.genotype) genotype += (genotype.empty() ? "" : " ") + op;
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<title>AutoReg search report</title>\n<style>" << kStyle << svg::kChartStyle << "</style>\n</head>\n<body>\n"
       << "<h1>AutoReg search report</h1>\n<p class=\"genotype-line\"><code>" << svg::escape(genotype)
       << "</code></p>\n"
       << summary_tables(log, summary, s)
       << "<h2>The derived genotype</h2>\n" << genotype_diagram(s)
       << "<h2>α: operation probabilities per edge</h2>\n" << probability_charts(log, s, marks)
       << "<h2>λ: objective weights</h2>\n" << lambda_chart(log, summary, marks)
       << "<h2>Validation Dice</h2>\n" << scalar_chart(log, "validation_dice", "validation Dice", true, marks)
       << "<h2>Predicted forward time</h2>\n"
       << scalar_chart(log, "predicted_ms", "predicted forward time (ms)", false, marks, budget)
       << "</body>\n</html>\n";
  return page.str();
}

std::vector<json> read_json_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("read_json_lines: cannot open '" + path + "'");
  std::vector<json> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) lines.push_back(std::move(j));
  }
  // A directory opens but cannot be read.
  if (in.bad()) throw std::runtime_error("read_json_lines: cannot read '" + path + "'");
  return lines;
}

}  // namespace autoreg::qc
