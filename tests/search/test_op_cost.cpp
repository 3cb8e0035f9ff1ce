// Operation costs: the expected latency and its gradient, the candidates a budget allows,
// derivation (argmax, then within the budget), the cost file, and a real measurement.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <filesystem>
#include <fstream>

#include "autoreg/search/op_cost.h"
#include "search_data.h"

namespace autoreg::search {
namespace {

using registration::Genotype;
using registration::kOperations;

TEST(OpCost, ExpectedLatencyAndItsGradient) {
  const OpCosts c = test::made_up_costs(8);
  const at::Tensor alpha = at::randn({kEdges, kCandidates}, at::kDouble).requires_grad_(true);
  const at::Tensor p = at::softmax(alpha, 1);
  const at::Tensor e = expected_ms(c, p);
  double sum = c.overhead_ms;
  for (int i = 0; i < kEdges; ++i) {
    for (int k = 0; k < kCandidates; ++k) sum += p[i][k].item<double>() * c.ms[i][k];
  }
  EXPECT_NEAR(e.item<double>(), sum, 1e-9);
  // d/dα_ik Σ_k p_ik c_ik = p_ik (c_ik − Σ_j p_ij c_ij).
  const at::Tensor g = torch::autograd::grad({e}, {alpha})[0];
  for (int i : {0, 5, 11}) {
    double mean = 0;
    for (int k = 0; k < kCandidates; ++k) mean += p[i][k].item<double>() * c.ms[i][k];
    for (int k = 0; k < kCandidates; ++k) {
      EXPECT_NEAR(g[i][k].item<double>(), p[i][k].item<double>() * (c.ms[i][k] - mean), 1e-9);
    }
  }
  // A genotype's time: overhead + its operations'.
  EXPECT_DOUBLE_EQ(predicted_ms(c, Genotype::standard()), 4 + 12 * 2.0 + 8.0 * (0 + 11) * 12 / 2);
}

TEST(OpCost, ABudgetMasksTheCandidatesThatCannotFit) {
  const OpCosts c = test::made_up_costs(8);
  const auto all = searched_edges("all");
  // The cheapest network: conv_1x1 everywhere, 4 + Σ(1 + 8e) = 4 + 12 + 528 = 544 ms.
  EXPECT_THROW(candidates_within(c, 543, all, Genotype::standard()), std::invalid_argument);
  const CandidateMask none = candidates_within(c, 0, all, Genotype::standard());
  for (const auto& row : none) {
    for (bool a : row) EXPECT_TRUE(a);
  }
  // 3 ms of slack: one edge may take an operation up to 3 ms dearer than its cheapest.
  const CandidateMask tight = candidates_within(c, 547, all, Genotype::standard());
  for (const auto& row : tight) {
    for (int k = 0; k < kCandidates; ++k) EXPECT_EQ(row[k], k <= 3) << k;
  }
}

TEST(OpCost, DeriveTakesTheArgmaxThenKeepsTheBudget) {
  const OpCosts c = test::made_up_costs(8);
  const auto deformation = searched_edges("deformation");
  at::Tensor p = at::full({kEdges, kCandidates}, 0.1 / 7, at::kDouble);
  for (int e = 0; e < kEdges; ++e) p[e][(e * 5) % kCandidates] = 0.9;
  CandidateMask allowed{};
  for (auto& row : allowed) row.fill(true);
  const Genotype base = Genotype::standard();
  const Genotype g = derive_genotype(p, c, 0, deformation, allowed, base);
  for (int e = 0; e < kEdges; ++e) {
    EXPECT_EQ(g.edges[e], e < 6 ? std::string("conv_3x3") : std::string(kOperations[(e * 5) % kCandidates])) << e;
  }
  // A masked argmax is never returned.
  allowed[6][(6 * 5) % kCandidates] = false;
  EXPECT_NE(derive_genotype(p, c, 0, deformation, allowed, base).edges[6], kOperations[(6 * 5) % kCandidates]);
  allowed[6].fill(true);
  // Under a budget below the argmax genotype's time, the result fits it.
  const double budget = predicted_ms(c, g) - 5;
  const Genotype fitted = derive_genotype(p, c, budget, deformation, allowed, base);
  EXPECT_LE(predicted_ms(c, fitted), budget);
  int changed = 0;
  for (int e = 0; e < kEdges; ++e) changed += fitted.edges[e] != g.edges[e];
  EXPECT_GE(changed, 1);
  EXPECT_LE(changed, 2);  // it gives up as little as it can
}

TEST(OpCost, FileRoundTripAndBadFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("autoreg-opcost-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "op_cost.json").string();
  OpCosts c = test::made_up_costs(8);
  c.threads = 2;
  save_op_costs(path, c);
  const OpCosts back = load_op_costs(path);
  EXPECT_EQ(back.grid, c.grid);
  EXPECT_EQ(back.ms, c.ms);
  EXPECT_EQ(back.overhead_ms, c.overhead_ms);
  std::ofstream(path) << "{\"grid\": [8, 8, 8], \"overhead_ms\": 1, \"ms\": {\"F0\": {\"conv_1x1\": 1}}}";
  try {
    load_op_costs(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::ofstream(path) << "not json";
  EXPECT_THROW(load_op_costs(path), std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST(OpCost, MeasuresEveryCandidateOnEveryEdge) {
  registration::NetworkSpec spec;
  spec.integration_steps = 2;
  const OpCosts c = measure_op_costs({8, 8, 8}, spec, "cpu", 1);
  for (const auto& row : c.ms) {
    for (double ms : row) EXPECT_GT(ms, 0);
  }
  EXPECT_GE(c.overhead_ms, 0);
  EXPECT_EQ(c.grid, (std::array<int64_t, 3>{8, 8, 8}));
}

}  // namespace
}  // namespace autoreg::search
