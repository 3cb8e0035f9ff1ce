// What `autoreg search` writes besides checkpoints: the genotype (text and JSON with α's
// probabilities, λ and the figures of the run), the report page, and the log lines.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <vector>

#include "autoreg/registration/genotype.h"
#include "autoreg/search/searcher.h"
#include "autoreg/pair/output_files.h"

namespace autoreg::pipeline::detail {

// One line of the search log (qc/search_report.h documents the fields).
nlohmann::json search_log_line(const search::Searcher& searcher, const search::SearchStep& step, double seconds);

// Forward time of `genotype` at the grid (median of `repetitions` after a warm-up), ms.
double measure_forward_ms(const registration::NetworkSpec& spec, const std::array<int64_t, 3>& grid,
                          const std::string& device, int repetitions);

// genotype.json: the fields qc/search_report.h lists for the summary. `entropy_start` from
// the log's first line (uniform when there is none).
nlohmann::json search_summary(const search::Searcher& searcher, const registration::ModelInfo& info,
                              const nlohmann::json& run, const std::array<double, search::kEdges>& entropy_start);

// The search log's lines for the report, with the decoupled evaluation's results
// (`evaluations`, parallel/evaluation.h; absent: none) at the steps they evaluated: a
// line's validation Dice is its checkpoint's, not the one that arrived during the step.
std::vector<nlohmann::json> log_with_evaluations(const std::string& log, const std::string& evaluations);

// genotype.txt: a comment header, then the 12 operation names one per edge (what
// `autoreg train --genotype` reads).
std::string genotype_file_text(const registration::Genotype& genotype, const nlohmann::json& summary);

}  // namespace autoreg::pipeline::detail
