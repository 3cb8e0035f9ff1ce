// The weighted training objective: its terms, the text form of its weights, and the
// label Dice term (computed without a full-resolution one-hot map) against the plain
// one-hot-and-pool reference.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include "autoreg/ops.h"
#include "autoreg/registration/labels.h"
#include "autoreg/registration/objective.h"
#include "autoreg/registration/regularization.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::registration {
namespace {

TEST(Objective, WeightsTextRoundTripAndErrors) {
  const ObjectiveWeights w = ObjectiveWeights::parse("ncc9=1.5, smoothness=0.25,ncc5_quarter=1e-3");
  EXPECT_EQ(w.lambda, (std::array<double, kObjectiveTerms>{1.5, 0, 1e-3, 0, 0.25}));
  EXPECT_EQ(ObjectiveWeights::parse(w.to_string()), w);
  for (const char* bad : {"", "ncc9", "ncc11=1", "ncc9=-1", "ncc9=x", "smoothness=nan"}) {
    EXPECT_THROW(ObjectiveWeights::parse(bad), std::invalid_argument) << bad;
  }
  EXPECT_EQ(ObjectiveWeights::for_similarity(Similarity::Ncc, 2).lambda, (std::array<double, kObjectiveTerms>{1, 0, 0, 0, 2}));
  EXPECT_EQ(ObjectiveWeights::for_similarity(Similarity::Mind, 1).lambda, (std::array<double, kObjectiveTerms>{0, 0, 0, 1, 1}));
}

TEST(Objective, TermsAreTheLossesTheyName) {
  at::manual_seed(1);
  const at::Tensor f = at::rand({1, 1, 16, 12, 20}), w = at::rand({1, 1, 16, 12, 20});
  const at::Tensor u = at::randn({1, 3, 16, 12, 20});
  const at::Tensor t = objective_terms(f, w, u, {true, true, true, true, true});
  const auto half = [](const at::Tensor& x) { return at::avg_pool3d(x, {2, 2, 2}); };
  EXPECT_NEAR(t[kNcc9].item<double>(), (1 - local_ncc(f, w, 9)).item<double>(), 1e-6);
  EXPECT_NEAR(t[kNcc7Half].item<double>(), (1 - local_ncc(half(f), half(w), 7)).item<double>(), 1e-6);
  EXPECT_NEAR(t[kNcc5Quarter].item<double>(), (1 - local_ncc(half(half(f)), half(half(w)), 5)).item<double>(), 1e-6);
  EXPECT_NEAR(t[kMind].item<double>(), similarity_loss(Similarity::Mind, f, w).item<double>(), 1e-6);
  EXPECT_NEAR(t[kSmoothness].item<double>(), gradient_l2(u).item<double>(), 1e-6);
  const at::Tensor some = objective_terms(f, w, u, {true, false, false, false, true});
  EXPECT_EQ(some[kNcc7Half].item<double>(), 0);
  EXPECT_EQ(some[kMind].item<double>(), 0);
}

TEST(Objective, LabelDiceMatchesTheOneHotReference) {
  at::manual_seed(2);
  for (const auto& size : std::vector<std::vector<int64_t>>{{1, 1, 16, 12, 20}, {1, 1, 9, 7, 11}}) {
    const at::Tensor a = at::randint(0, 40, size).to(at::kInt), b = at::randint(0, 40, size).to(at::kInt);
    const at::Tensor u = (at::randn({1, 3, size[2], size[3], size[4]}) * 2).requires_grad_(true);
    const std::vector<int64_t> labels = {1, 3, 7, 8, 20, 39};
    const auto half = [](const at::Tensor& x) { return at::avg_pool3d(x, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true); };
    const at::Tensor reference =
        soft_dice_loss(half(one_hot(b, labels)), ops::warp(half(one_hot(a, labels)), half(u) * 0.5));
    const at::Tensor loss = label_dice_loss(a, b, u, labels);
    EXPECT_NEAR(loss.item<double>(), reference.item<double>(), 1e-6);
    const at::Tensor g = torch::autograd::grad({loss}, {u})[0];
    const at::Tensor g_ref = torch::autograd::grad({reference}, {u})[0];
    EXPECT_TRUE(at::allclose(g, g_ref, 1e-4, 1e-7));
  }
}

}  // namespace
}  // namespace autoreg::registration
