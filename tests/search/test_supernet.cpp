// The supernet: a mixed edge with one-hot α is the plain operation, a sampled path is the
// network of the operations it sampled, sampling follows softmax(α) and never picks a
// masked candidate, and α's gradient in the full mixed mode matches finite differences.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <map>

#include "autoreg/registration/autoreg_net.h"
#include "autoreg/search/mixed_edge.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/supernet.h"

namespace autoreg::search {
namespace {

using registration::Genotype;
using registration::kOperations;

// A plain network of `genotype` carrying the supernet's weights for those operations.
std::shared_ptr<registration::AutoRegNet> plain_copy(Supernet& s, const Genotype& genotype,
                                                     const registration::NetworkSpec& spec) {
  registration::NetworkSpec plain = spec;
  plain.genotype = genotype;
  auto net = std::make_shared<registration::AutoRegNet>(plain);
  std::map<std::string, at::Tensor> theirs;
  for (const auto& p : s.network_ptr()->named_parameters()) theirs[p.key()] = p.value();
  // A searched edge's candidate carries slices of the edge's shared kernels.
  for (const auto& m : s.network_ptr()->named_modules()) {
    const auto edge = std::dynamic_pointer_cast<MixedEdgeImpl>(m.value());
    if (!edge) continue;
    const auto layout = registration::edge_layout(spec.matching_cost);
    for (int e = 0; e < kEdges; ++e) {
      if (m.key() != layout[e].name) continue;
      for (const auto& [name, value] : edge->plain_weights(operation_index(genotype.edges[e]))) {
        theirs[m.key() + "." + name] = value.detach();
      }
    }
  }
  c10::AutoGradMode no_grad(false);
  for (const auto& p : net->named_parameters()) {
    EXPECT_TRUE(theirs.count(p.key())) << p.key();
    if (!theirs.count(p.key())) continue;
    p.value().copy_(theirs[p.key()]);
  }
  return net;
}

TEST(MixedEdge, OneHotWeightsGiveThePlainOperation) {
  const auto layout = registration::edge_layout(true)[7];  // D4_1: 48 → 32
  auto state = std::make_shared<PathState>();
  for (auto& row : state->allowed) row.fill(true);
  MixedEdge edge(7, layout, state);
  const at::Tensor x = at::randn({1, layout.in, 6, 5, 7});
  c10::AutoGradMode no_grad(false);
  for (int k = 0; k < kCandidates; ++k) {
    state->mode = PathMode::Mixed;
    at::Tensor alpha = at::full({kEdges, kCandidates}, -1e9);
    alpha[7][k] = 0;
    state->weights = at::softmax(alpha, 1);
    // A plain edge (registration::make_edge) carrying the candidate's slices.
    auto plain = registration::make_edge(kOperations[k], layout.in, layout.out, layout.stride);
    const auto slices = edge->plain_weights(k);
    for (const auto& p : plain->named_parameters()) p.value().copy_(slices.at(p.key()));
    const at::Tensor expected = plain->forward(x);
    EXPECT_TRUE(at::equal(edge->forward(x), expected)) << kOperations[k];
    state->mode = PathMode::Fixed;
    state->chosen[7] = k;
    EXPECT_TRUE(at::equal(edge->forward(x), expected)) << kOperations[k];
  }
}

TEST(Supernet, OneHotAlphaIsThePlainNetwork) {
  at::manual_seed(3);
  registration::NetworkSpec spec;
  spec.integration_steps = 3;
  Supernet s(spec, searched_edges("all"));
  Genotype g;
  for (int e = 0; e < kEdges; ++e) g.edges[e] = kOperations[(3 * e + 1) % kCandidates];
  {
    c10::AutoGradMode no_grad(false);
    s.alpha().fill_(-1e9);
    for (int e = 0; e < kEdges; ++e) s.alpha()[e][operation_index(g.edges[e])] = 0;
  }
  EXPECT_EQ(s.argmax(), g);
  auto plain = plain_copy(s, g, spec);
  const at::Tensor m = at::rand({1, 1, 12, 8, 16}), f = at::rand({1, 1, 12, 8, 16});
  c10::AutoGradMode no_grad(false);
  s.use_mixed(false);
  const at::Tensor expected = plain->forward(m, f);
  EXPECT_TRUE(at::allclose(s.network().forward(m, f), expected, 1e-5, 1e-7));
  s.use_fixed(g);
  EXPECT_TRUE(at::allclose(s.network().forward(m, f), expected, 1e-5, 1e-7));
}

TEST(Supernet, ASampledPathIsTheNetworkOfItsOperations) {
  at::manual_seed(4);
  registration::NetworkSpec spec;
  spec.integration_steps = 3;
  Supernet s(spec, searched_edges("all"));
  const at::Tensor m = at::rand({1, 1, 8, 12, 8}), f = at::rand({1, 1, 8, 12, 8});
  for (int draw = 0; draw < 3; ++draw) {
    s.use_sampled(1.0, /*alpha_grad=*/true);
    Genotype g;
    for (int e = 0; e < kEdges; ++e) g.edges[e] = kOperations[s.path().chosen[e]];
    const at::Tensor sampled = s.network().forward(m, f);
    auto plain = plain_copy(s, g, spec);
    c10::AutoGradMode no_grad(false);
    EXPECT_TRUE(at::allclose(sampled, plain->forward(m, f), 1e-4, 1e-6)) << g.to_string();
    // The straight-through weight still gives α a gradient.
  }
  s.use_sampled(1.0, true);
  const at::Tensor loss = s.network().forward(m, f).pow(2).sum();
  const at::Tensor g_alpha = torch::autograd::grad({loss}, {s.alpha()})[0];
  EXPECT_GT(g_alpha.abs().sum().item<double>(), 0);
}

TEST(Supernet, SamplingFollowsTheProbabilitiesAndSkipsMaskedCandidates) {
  at::manual_seed(5);
  Supernet s(registration::NetworkSpec{}, searched_edges("deformation"));
  CandidateMask allowed{};
  for (auto& row : allowed) row.fill(true);
  allowed[9][7] = allowed[9][2] = false;  // D2_0: no dil_conv_7x7, no conv_5x5
  s.set_allowed(allowed);
  {
    c10::AutoGradMode no_grad(false);
    s.alpha()[10] = at::log(at::tensor({0.05, 0.4, 0.05, 0.2, 0.1, 0.1, 0.05, 0.05}));
  }
  std::array<int, kCandidates> count_d2_0{}, count_d2_1{};
  const int draws = 4000;
  for (int i = 0; i < draws; ++i) {
    s.use_sampled(1.0, false);
    ++count_d2_0[s.path().chosen[9]];
    ++count_d2_1[s.path().chosen[10]];
    EXPECT_EQ(s.path().chosen[0], operation_index("conv_3x3"));  // the feature cell is not searched
  }
  EXPECT_EQ(count_d2_0[7], 0);
  EXPECT_EQ(count_d2_0[2], 0);
  const at::Tensor p = s.probabilities();
  EXPECT_EQ(p[9][7].item<float>(), 0.0f);
  EXPECT_NEAR(p[9][0].item<double>(), 1.0 / 6, 1e-6);
  EXPECT_EQ(p[0][operation_index("conv_3x3")].item<float>(), 1.0f);
  for (int k = 0; k < kCandidates; ++k) {
    EXPECT_NEAR(double(count_d2_1[k]) / draws, p[10][k].item<double>(), 0.03) << kOperations[k];
  }
}

// α's gradient through the full mixed network (float64) against central differences of
// the same loss.
TEST(Supernet, MixedAlphaGradientMatchesFiniteDifferences) {
  at::manual_seed(6);
  registration::NetworkSpec spec;
  spec.integration_steps = 2;
  Supernet s(spec, searched_edges("all"));
  s.network().to(at::kDouble);
  s.alpha() = (at::randn({kEdges, kCandidates}, at::kDouble) * 0.5).requires_grad_(true);
  // Large enough initial flow heads that the field, and so the loss, depends on α.
  {
    c10::AutoGradMode no_grad(false);
    for (auto& p : s.network_ptr()->named_parameters()) {
      if (p.key().find("_flow") != std::string::npos) p.value().normal_(0, 0.05);
    }
  }
  const at::Tensor m = at::rand({1, 1, 8, 8, 8}, at::kDouble), f = at::rand({1, 1, 8, 8, 8}, at::kDouble);
  const OpCosts costs = [] {
    OpCosts c;
    for (int e = 0; e < kEdges; ++e) {
      for (int k = 0; k < kCandidates; ++k) c.ms[e][k] = 1.0 + k + e;
    }
    return c;
  }();
  const auto loss = [&] {
    s.use_mixed(true);
    const at::Tensor u = s.network().forward(m, f);
    return (u * f.expand_as(u)).sum() + 1e-3 * expected_ms(costs, s.probabilities());
  };
  const at::Tensor g = torch::autograd::grad({loss()}, {s.alpha()})[0];
  c10::AutoGradMode no_grad(false);
  const double h = 1e-5;
  for (const auto& [e, k] : std::vector<std::pair<int, int>>{{0, 1}, {3, 7}, {6, 2}, {8, 4}, {9, 0}, {11, 6}}) {
    const double saved = s.alpha()[e][k].item<double>();
    s.alpha()[e][k] = saved + h;
    const double plus = loss().item<double>();
    s.alpha()[e][k] = saved - h;
    const double minus = loss().item<double>();
    s.alpha()[e][k] = saved;
    const double numeric = (plus - minus) / (2 * h);
    EXPECT_NEAR(g[e][k].item<double>(), numeric, 1e-6 + 1e-4 * std::abs(numeric)) << "edge " << e << " op " << k;
  }
}

}  // namespace
}  // namespace autoreg::search
