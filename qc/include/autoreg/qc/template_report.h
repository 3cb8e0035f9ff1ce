// The QC page of `autoreg template` (index.html in its output folder): the settings, a
// convergence plot (mean shape-update norm and mean similarity of the warped subjects
// to the template, per iteration), each iteration's picture, and the subjects ordered
// by how well they fit the final template, worst first.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace autoreg::qc {

// `summary`: what build_template writes to summary.json ("iterations": the log's lines,
// "final_similarity": subject → correlation, "settings", "seconds").
std::string render_template_report(const nlohmann::json& summary);

}  // namespace autoreg::qc
