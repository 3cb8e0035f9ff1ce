// The search's report: one self-contained HTML page (no script, no external file, no
// plotting library) with SVG plots drawn here, from the search's JSON-lines log and its
// summary (genotype.json). What `autoreg search` writes as report.html. It reads only
// JSON: no LibTorch, beside the other reports (the QC pictures and their index.html).
//
// The log (search.log.jsonl), one JSON object per step:
//   step            int, steps done (this one included)
//   seconds         float, search time so far (resumed runs included)
//   phase           "warmup" (only ω moves), "search" (ω, α and λ), "architecture"
//                   (sequential mode: ω and α), "objective" (sequential mode: ω and λ on
//                   the derived architecture)
//   loss            float, the training loss of the step (λ-weighted terms + Dice term)
//   terms           {"ncc9": f, "ncc7_half": f, "ncc5_quarter": f, "mind": f, "smoothness": f}
//   lambda          {the same five names: f}, the objective weights after the step
//   probabilities   [12][8] floats: softmax(α) per edge after the step, edges in genotype
//                   order, operations in registration::kOperations order (a row of an
//                   edge that is not searched is all 0 except 1 at its fixed operation)
//   entropy         [12] floats: entropy (nats) of each edge's row of probabilities
//   predicted_ms    float, the expected forward time Σ softmax(α)·cost (+ fixed overhead)
//   genotype        string, the current argmax genotype (12 names separated by spaces)
//   validation_dice float, only on steps where the derived network was validated
//   rollbacks       int, from the first rollback (non-finite step) on: how many so far
//   validation_loss float, on steps that updated α: its objective on the validation pair
//   hyper_dice_loss float, on steps that updated λ: the validation pair's soft Dice loss
//                   after the unrolled step
//   step_seconds    {"weights": f, "objective": f, "architecture": f}: what the step's
//                   ω, λ and α updates took
//
// The summary (genotype.json):
//   genotype        [12] strings; edges [12] strings ("F0".."F5", "D4_0".."D4_2",
//                   "D2_0".."D2_2"); operations [8] strings; searched [12] bools
//   probabilities   [12][8]; entropy_start [12]; entropy_end [12]
//   lambda          {five names: f}
//   predicted_forward_ms, measured_forward_ms, budget_ms (0: none)   floats
//   grid [3] ints, spacing_mm float, steps int, search_seconds float,
//   validation_dice float (may be null), seed int, mode string, order string,
//   edges_searched string ("all" or "deformation")
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace autoreg::qc {

// The page. Lines of the log that lack a field are skipped in the plots that need it.
// Throws std::invalid_argument when the summary lacks genotype, edges or operations.
std::string render_search_report(const std::vector<nlohmann::json>& log, const nlohmann::json& summary);

// The lines of a JSON-lines file; lines that do not parse (a last line cut short by a
// kill) are skipped. Throws std::runtime_error naming the file when it cannot be read.
std::vector<nlohmann::json> read_json_lines(const std::string& path);

}  // namespace autoreg::qc
