// What each candidate operation costs on each edge at the search grid, measured on this
// machine (oneDNN runs 5³ convolutions at about twice the FLOP rate of 3³ ones, so cost
// is measured, not derived from FLOPs; docs/design.md, "Performance notes"), and what follows
// from it: the expected forward time of the supernet's distribution, which enters α's
// objective, the candidates a forward-time budget allows, and the genotype derived under
// that budget.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "autoreg/registration/genotype.h"
#include "autoreg/registration/network.h"
#include "autoreg/search/supernet.h"

namespace autoreg::search {

using CandidateMask = std::array<std::array<bool, kCandidates>, kEdges>;

struct OpCosts {
  std::array<std::array<double, kCandidates>, kEdges> ms{};  // forward time of candidate k on edge e
  double overhead_ms = 0;   // the rest of a forward pass: flow heads, integration, warps, upsampling
  std::array<int64_t, 3> grid{0, 0, 0};
  int threads = 0;
  std::string device = "cpu";
};

// Times every candidate on every edge (its input shape at `grid`, forward, no gradient;
// the median of `repetitions` after one warm-up) and the rest of a forward pass (the
// network with `base`'s genotype, minus its edges). `progress` gets a line per edge.
OpCosts measure_op_costs(const std::array<int64_t, 3>& grid, const registration::NetworkSpec& base,
                         const std::string& device, int repetitions,
                         const std::function<void(const std::string&)>& progress = {});

// JSON: {"grid": [D,H,W], "threads": T, "device": "cpu", "overhead_ms": x,
//        "ms": {"F0": {"conv_1x1": x, ...}, ...}}. Reading throws std::runtime_error naming
// the file and what is wrong (missing edge or operation, non-positive or non-finite time).
void save_op_costs(const std::string& path, const OpCosts& costs);
OpCosts load_op_costs(const std::string& path);

// The forward time of a genotype: overhead + Σ its operations' costs.
double predicted_ms(const OpCosts& costs, const registration::Genotype& genotype);

// overhead + Σ_e Σ_k p[e][k] · ms[e][k]: differentiable in the 12×8 probabilities.
at::Tensor expected_ms(const OpCosts& costs, const at::Tensor& probabilities);

// The candidates that can be part of a network within `budget_ms`: candidate k on a
// searched edge e is allowed when overhead + ms[e][k] + the cheapest choice on every other
// edge (the fixed operation on edges not searched) fits. Throws std::invalid_argument
// when even the cheapest network does not fit (naming both times).
CandidateMask candidates_within(const OpCosts& costs, double budget_ms, const std::array<bool, kEdges>& searched,
                                const registration::Genotype& base);

// The strongest allowed candidate of each searched edge (the base operation elsewhere);
// while the genotype's predicted time exceeds `budget_ms` (> 0), the edge switch to a
// cheaper allowed candidate that gives up the least log-probability per millisecond saved.
registration::Genotype derive_genotype(const at::Tensor& probabilities, const OpCosts& costs, double budget_ms,
                                       const std::array<bool, kEdges>& searched, const CandidateMask& allowed,
                                       const registration::Genotype& base);

}  // namespace autoreg::search
