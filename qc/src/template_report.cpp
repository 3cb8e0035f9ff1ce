#include "autoreg/qc/template_report.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "svg.h"

namespace autoreg::qc {

std::string render_template_report(const nlohmann::json& summary) {
  using svg::escape;
  std::vector<std::pair<double, double>> update, similarity;
  const nlohmann::json iterations = summary.value("iterations", nlohmann::json::array());
  for (const auto& line : iterations) {
    const double t = line.value("iteration", 0.0);
    update.emplace_back(t, line.value("update_mm", 0.0));
    similarity.emplace_back(t, line.value("similarity", 0.0));
  }
  svg::ChartOptions update_chart;
  update_chart.title = "mean shape update (mm, inside the template; log scale)";
  update_chart.legend = false;
  update_chart.log_y = true;  // the first update (to the mean pose) dwarfs the later ones
  svg::ChartOptions similarity_chart;
  similarity_chart.title = "mean similarity of the warped subjects to the template (correlation)";
  similarity_chart.legend = false;
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>autoreg template</title>\n"
      "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}img{max-width:100%}"
      "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left}"
      "tr:nth-child(even){background:#f3f3f3}" +
      std::string(svg::kChartStyle) + "</style></head><body>\n"
      "<h1>autoreg template</h1>\n<p>" +
      std::to_string(summary.value("subjects", 0)) + " subjects, " + std::to_string(update.size()) +
      " iterations, " + svg::label(summary.value("seconds", 0.0), 4) + " s. Settings: <code>" +
      escape(summary.value("settings", nlohmann::json::object()).dump()) +
      "</code>. The template: <code>template.nii.gz</code>.</p>\n<h2>Convergence</h2>\n" +
      svg::line_chart({{"update", svg::colour(0), update, true}}, update_chart) +
      svg::line_chart({{"similarity", svg::colour(1), similarity, true}}, similarity_chart) +
      "\n<h2>Subjects, worst fit first</h2>\n<table><tr><th>subject</th><th>correlation with the final template</th></tr>\n";
  std::vector<std::pair<double, std::string>> fits;
  const nlohmann::json final_fits = summary.value("final_similarity", nlohmann::json::object());  // kept: items() refers to it
  for (const auto& [name, value] : final_fits.items()) {
    fits.emplace_back(value.get<double>(), name);
  }
  std::sort(fits.begin(), fits.end());
  for (const auto& [value, name] : fits) {
    html += "<tr><td>" + escape(name) + "</td><td>" + svg::label(value, 4) + "</td></tr>\n";
  }
  html += "</table>\n<h2>Iterations</h2>\n";
  for (const auto& line : iterations) {
    html += "<h3>Iteration " + std::to_string(line.value("iteration", 0)) + "</h3>\n<p>shape update " +
            svg::label(line.value("update_mm", 0.0), 3) + " mm (max " + svg::label(line.value("update_max_mm", 0.0), 3) +
            "), similarity " + svg::label(line.value("similarity", 0.0), 4) + ", " +
            svg::label(line.value("seconds", 0.0), 3) + " s</p>\n<img src=\"" + escape(line.value("picture", "")) +
            "\" alt=\"the template at this iteration\">\n";
  }
  return html + "</body></html>\n";
}

}  // namespace autoreg::qc
