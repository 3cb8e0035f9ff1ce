// The triple-level optimiser on tiny phantoms: λ's hypergradient and α's gradients
// (first and second order) match central differences of their objectives (float64,
// full mixed path); a stopped and resumed search equals the uninterrupted one; an
// injected NaN or gradient spike is rolled back and the search completes; λ's scale
// stays fixed; sequential mode runs its phases;
// data without labelled validation subjects is refused.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <filesystem>

#include "autoreg/ops.h"
#include "autoreg/registration/labels.h"
#include "autoreg/registration/objective.h"
#include "autoreg/search/searcher.h"
#include "search_data.h"

namespace autoreg::search {
namespace {

using registration::TrainingPair;

constexpr int64_t kGrid = 12;

SearchOptions exact_options() {
  SearchOptions o;
  o.float64 = true;
  o.path = Path::Mixed;
  o.precondition = false;  // ω' = ω − η·∇ω L_train: what the reference below computes
  o.augment = false;
  o.update_crop = 1;
  o.dice_weight = 0;
  o.weight_lr = 0.05;
  o.latency_weight = 0.01;
  o.initial_objective.lambda = {1.0, 0.5, 0.25, 0.0, 0.3};
  return o;
}

TrainingPair pair_of(const registration::Subject& moving, const registration::Subject& fixed) {
  return {moving.image.to(at::kDouble), fixed.image.to(at::kDouble), moving.labels, fixed.labels, false};
}

// Flow heads large enough that the field, and so every loss, depends on every weight.
void wake_flow_heads(Searcher& s) {
  c10::AutoGradMode no_grad(false);
  at::manual_seed(9);
  for (auto& p : s.supernet().network_ptr()->named_parameters()) {
    if (p.key().find("_flow") != std::string::npos) p.value().normal_(0, 0.05);
  }
}

class SearcherMath : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = test::phantom_set(kGrid, 2, 2);
    at::manual_seed(1);
    searcher_ = std::make_unique<Searcher>(data_, test::phantom_info(kGrid), options_, test::made_up_costs(kGrid));
    wake_flow_heads(*searcher_);
    {
      c10::AutoGradMode no_grad(false);
      searcher_->supernet().alpha().copy_(at::randn({kEdges, kCandidates}, at::kDouble) * 0.3);
    }
    train_ = pair_of(data_.train[0], data_.train[1]);
    val_ = pair_of(data_.validation[0], data_.validation[1]);
  }
  // The training loss Σ λ_i term_i on the training pair, as the searcher defines it.
  at::Tensor train_loss(const at::Tensor& lambda) {
    Supernet& s = searcher_->supernet();
    s.use_mixed(false);
    const at::Tensor u = s.network().forward(train_.moving, train_.fixed);
    const at::Tensor warped = ops::warp(train_.moving, u, ops::Interpolation::Linear, ops::Padding::Border);
    const at::Tensor terms = registration::objective_terms(train_.fixed, warped, u, {true, true, true, false, true});
    return (terms * lambda).sum();
  }
  // f after one step of the training loss, ω restored after: ω − η·P·g, with P the
  // preconditioner of Adam's first step at the starting λ (1/|g|), held fixed, when the
  // searcher preconditions; else a plain gradient step.
  double after_step(const at::Tensor& lambda, const std::function<double()>& f) {
    const auto params = searcher_->supernet().weights();
    if (options_.precondition && preconditioner_.empty()) {
      const auto g0 = torch::autograd::grad({train_loss(searcher_->lambda())}, params, {}, false, false, true);
      for (const auto& g : g0) preconditioner_.push_back(1.0 / (g.abs() + 1e-8));
    }
    const auto g = torch::autograd::grad({train_loss(lambda)}, params, {}, false, false, true);
    std::vector<at::Tensor> saved;
    {
      c10::AutoGradMode no_grad(false);
      for (size_t i = 0; i < params.size(); ++i) {
        saved.push_back(params[i].detach().clone());
        if (g[i].defined()) params[i].sub_(options_.precondition ? g[i] * preconditioner_[i] : g[i], options_.weight_lr);
      }
    }
    const double value = f();
    c10::AutoGradMode no_grad(false);
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
    return value;
  }
  double val_dice_loss() {
    c10::AutoGradMode no_grad(false);
    Supernet& s = searcher_->supernet();
    s.use_mixed(false);
    const at::Tensor u = s.network().forward(val_.moving, val_.fixed);
    return registration::label_dice_loss(val_.moving_labels, val_.fixed_labels, u,
                                         registration::shared_labels(val_.moving_labels, val_.fixed_labels))
        .item<double>();
  }
  // α's validation objective: λ-weighted terms on the validation pair + the latency term.
  double val_objective() {
    c10::AutoGradMode no_grad(false);
    Supernet& s = searcher_->supernet();
    s.use_mixed(false);
    const at::Tensor u = s.network().forward(val_.moving, val_.fixed);
    const at::Tensor warped = ops::warp(val_.moving, u, ops::Interpolation::Linear, ops::Padding::Border);
    const at::Tensor terms = registration::objective_terms(val_.fixed, warped, u, {true, true, true, false, true});
    const OpCosts c = test::made_up_costs(kGrid);
    const double reference = predicted_ms(c, registration::Genotype::standard());
    return (terms * searcher_->lambda()).sum().item<double>() +
           options_.latency_weight * expected_ms(c, s.probabilities()).item<double>() / reference;
  }
  // Central differences of J over a few α entries, against `analytic`.
  void expect_alpha_gradient(const at::Tensor& analytic, const std::function<double()>& J) {
    at::Tensor& alpha = searcher_->supernet().alpha();
    const double h = 1e-4;
    for (const auto& [e, k] : std::vector<std::pair<int, int>>{{0, 3}, {4, 0}, {7, 5}, {9, 1}, {11, 7}}) {
      double saved;
      {
        c10::AutoGradMode no_grad(false);
        saved = alpha[e][k].item<double>();
        alpha[e][k] = saved + h;
      }
      const double plus = J();
      {
        c10::AutoGradMode no_grad(false);
        alpha[e][k] = saved - h;
      }
      const double minus = J();
      {
        c10::AutoGradMode no_grad(false);
        alpha[e][k] = saved;
      }
      const double numeric = (plus - minus) / (2 * h);
      EXPECT_NEAR(analytic[e][k].item<double>(), numeric, 1e-7 + 2e-3 * std::abs(numeric)) << "edge " << e << " op " << k;
    }
  }

  SearchOptions options_ = exact_options();
  std::vector<at::Tensor> preconditioner_;
  registration::TrainingSet data_;
  std::unique_ptr<Searcher> searcher_;
  TrainingPair train_, val_;
};

TEST_F(SearcherMath, ObjectiveHypergradientMatchesFiniteDifferences) {
  const at::Tensor analytic = searcher_->objective_hypergradient(train_, val_);
  const at::Tensor lambda = searcher_->lambda();
  const double h = 1e-4;
  const double scale = analytic.abs().max().item<double>();
  int checked = 0;
  for (int i : {registration::kNcc9, registration::kNcc7Half, registration::kNcc5Quarter, registration::kSmoothness}) {
    at::Tensor plus = lambda.clone(), minus = lambda.clone();
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (after_step(plus, [&] { return val_dice_loss(); }) -
                            after_step(minus, [&] { return val_dice_loss(); })) / (2 * h);
    // Within 1 % of the largest component (the ε of the Hessian-vector product sees the
    // interpolation's kinks, see below).
    EXPECT_NEAR(analytic[i].item<double>(), numeric, 1e-2 * scale) << registration::kObjectiveTermNames[i];
    checked += std::abs(numeric) > 1e-7;
  }
  EXPECT_GE(checked, 3) << "the Dice after the step should depend on most weights";
  EXPECT_EQ(analytic[registration::kMind].item<double>(), 0.0);  // not searched, not computed
}

// The default: the virtual step is the one Adam is about to take (its first here).
class Preconditioned : public SearcherMath {
 protected:
  void SetUp() override {
    options_.precondition = true;
    options_.weight_lr = 1e-3;
    SearcherMath::SetUp();
  }
};

TEST_F(Preconditioned, ObjectiveHypergradientMatchesFiniteDifferences) {
  const at::Tensor analytic = searcher_->objective_hypergradient(train_, val_);
  const at::Tensor lambda = searcher_->lambda();
  const double h = 1e-4, scale = analytic.abs().max().item<double>();
  EXPECT_GT(scale, 0);
  for (int i : {registration::kNcc9, registration::kNcc7Half, registration::kNcc5Quarter, registration::kSmoothness}) {
    at::Tensor plus = lambda.clone(), minus = lambda.clone();
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (after_step(plus, [&] { return val_dice_loss(); }) -
                            after_step(minus, [&] { return val_dice_loss(); })) / (2 * h);
    EXPECT_NEAR(analytic[i].item<double>(), numeric, 1e-2 * scale) << registration::kObjectiveTermNames[i];
  }
}

TEST_F(SearcherMath, FirstOrderArchitectureGradientMatchesFiniteDifferences) {
  const at::Tensor analytic = searcher_->architecture_gradient(train_, val_);
  expect_alpha_gradient(analytic, [&] { return val_objective(); });
}

class SecondOrder : public SearcherMath {
 protected:
  void SetUp() override {
    options_.order = Order::Second;
    SearcherMath::SetUp();
  }
};

// The unrolled objective L_val(ω − η∇ω L_train(ω, α), α) is not twice differentiable
// (trilinear interpolation has kinks wherever a sample crosses a voxel boundary, and
// near the identity every sample sits on one), so no finite difference of it is a
// reference for the second-order term. What can be checked: the result is the gradient
// at ω' minus η times the Hessian-vector product, each computed here independently, and
// the correction vanishes with η.
TEST_F(SecondOrder, ArchitectureGradientIsTheUnrolledGradientMinusTheHessianTerm) {
  const at::Tensor analytic = searcher_->architecture_gradient(train_, val_);
  Supernet& s = searcher_->supernet();
  const auto params = s.weights();
  const at::Tensor lambda = searcher_->lambda();
  const double eta = options_.weight_lr;
  at::Tensor& alpha = s.alpha();
  const OpCosts c = test::made_up_costs(kGrid);
  const double reference = predicted_ms(c, registration::Genotype::standard());
  const auto loss_on = [&](const TrainingPair& pair) {
    s.use_mixed(true);
    const at::Tensor u = s.network().forward(pair.moving, pair.fixed);
    const at::Tensor warped = ops::warp(pair.moving, u, ops::Interpolation::Linear, ops::Padding::Border);
    return (registration::objective_terms(pair.fixed, warped, u, {true, true, true, false, true}) * lambda).sum();
  };
  const auto move = [&](const std::vector<at::Tensor>& d, double scale) {
    c10::AutoGradMode no_grad(false);
    for (size_t i = 0; i < params.size(); ++i) {
      if (d[i].defined()) params[i].add_(d[i], scale);
    }
  };
  // ω' = ω − η g; at ω': ∇α L_val and v = ∇ω L_val.
  const auto g = torch::autograd::grad({loss_on(train_)}, params, {}, false, false, true);
  move(g, -eta);
  std::vector<at::Tensor> inputs = {alpha};
  inputs.insert(inputs.end(), params.begin(), params.end());
  const auto at_prime = torch::autograd::grad({loss_on(val_)}, inputs, {}, false, false, true);
  move(g, eta);
  const std::vector<at::Tensor> v(at_prime.begin() + 1, at_prime.end());
  double n = 0;
  for (const auto& t : v) n += t.defined() ? t.pow(2).sum().item<double>() : 0;
  const double eps = 1e-4 / std::sqrt(n);
  move(v, eps);
  const at::Tensor plus = torch::autograd::grad({loss_on(train_)}, {alpha})[0];
  move(v, -2 * eps);
  const at::Tensor minus = torch::autograd::grad({loss_on(train_)}, {alpha})[0];
  move(v, eps);
  const at::Tensor latency = torch::autograd::grad(
      {options_.latency_weight * expected_ms(c, s.probabilities()) / reference}, {alpha})[0];
  const at::Tensor correction = -eta * (plus - minus) / (2 * eps);
  const at::Tensor expected = at_prime[0] + correction + latency;
  EXPECT_TRUE(at::allclose(analytic, expected, 1e-6, 1e-10)) << (analytic - expected).abs().max().item<double>();
  EXPECT_GT(correction.abs().max().item<double>(), 1e-3 * at_prime[0].abs().max().item<double>());
}

// A short sampled search on float32 phantoms.
SearchOptions short_search() {
  SearchOptions o;
  o.path = Path::Sampled;
  o.steps = 6;
  o.warmup_fraction = 0.2;
  o.architecture_every = 1;
  o.objective_every = 2;
  o.snapshot_every = 2;
  o.seed = 3;
  return o;
}

TEST(Searcher, StoppedAndResumedEqualsUninterrupted) {
  const auto data = test::phantom_set(kGrid, 3, 2);
  const auto info = test::phantom_info(kGrid);
  const auto costs = test::made_up_costs(kGrid);
  const std::string ckpt =
      (std::filesystem::temp_directory_path() / ("autoreg-search-" + std::to_string(::getpid()) + ".ckpt")).string();
  at::manual_seed(1);
  Searcher straight(data, info, short_search(), costs);
  while (!straight.finished()) straight.step();

  at::manual_seed(1);
  Searcher first(data, info, short_search(), costs);
  for (int i = 0; i < 3; ++i) first.step();
  first.notes["seconds"] = "12.5";
  first.save_checkpoint(ckpt);
  first.finish_checkpoints();  // written in the background
  at::manual_seed(2);  // another initialisation: the checkpoint must replace it all
  Searcher resumed(data, info, short_search(), costs);
  resumed.resume(ckpt);
  EXPECT_EQ(resumed.steps_done(), 3);
  EXPECT_EQ(resumed.notes["seconds"], "12.5");
  while (!resumed.finished()) resumed.step();

  EXPECT_TRUE(at::equal(straight.supernet().alpha(), resumed.supernet().alpha()));
  EXPECT_TRUE(at::equal(straight.lambda(), resumed.lambda()));
  auto theirs = resumed.supernet().network_ptr()->named_parameters();
  for (const auto& p : straight.supernet().network_ptr()->named_parameters()) {
    EXPECT_TRUE(at::equal(p.value(), theirs[p.key()])) << p.key();
  }
  EXPECT_EQ(straight.derived(), resumed.derived());
  // α and λ moved.
  EXPECT_GT(straight.supernet().alpha().abs().sum().item<double>(), 0);
  EXPECT_FALSE(at::equal(straight.lambda(), at::tensor({1.0, 0.5, 0.25, 0.0, 1.0}, at::kDouble)));

  // Another seed's checkpoint is refused, naming the option.
  SearchOptions other = short_search();
  other.seed = 4;
  Searcher refuses(data, info, other, costs);
  try {
    refuses.resume(ckpt);
    FAIL();
  } catch (const registration::ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find("seed was 3, is 4"), std::string::npos) << e.what();
  }
  std::filesystem::remove(ckpt);
}

// A fault after a checkpoint rolls back to that checkpoint's state, in the run that wrote
// it and in a run resumed from it alike.
TEST(Searcher, ARollbackAfterResumeRepeatsTheUninterruptedRun) {
  const auto data = test::phantom_set(kGrid, 3, 2);
  const auto info = test::phantom_info(kGrid);
  const auto costs = test::made_up_costs(kGrid);
  SearchOptions o = short_search();
  o.snapshot_every = 4;
  o.inject_nan_at = 5;
  const std::string ckpt =
      (std::filesystem::temp_directory_path() / ("autoreg-rollback-" + std::to_string(::getpid()) + ".ckpt")).string();
  Searcher straight(data, info, o, costs);
  for (int i = 0; i < 3; ++i) straight.step();
  straight.save_checkpoint(ckpt);
  while (!straight.finished()) straight.step();
  Searcher resumed(data, info, o, costs);
  resumed.resume(ckpt);
  int64_t rollbacks = 0;
  while (!resumed.finished()) rollbacks = resumed.step().rollbacks;
  EXPECT_EQ(rollbacks, 1);
  EXPECT_TRUE(at::equal(straight.supernet().alpha(), resumed.supernet().alpha()));
  EXPECT_TRUE(at::equal(straight.lambda(), resumed.lambda()));
  auto theirs = resumed.supernet().network_ptr()->named_parameters();
  for (const auto& p : straight.supernet().network_ptr()->named_parameters()) {
    EXPECT_TRUE(at::equal(p.value(), theirs[p.key()])) << p.key();
  }
  std::filesystem::remove(ckpt);
}

// Runs `s` to its end: every step's loss finite and its gradient under the spike threshold
// (a step over it is rolled back, never returned); returns the rollbacks.
int64_t run_to_end(Searcher& s, const SearchOptions& o) {
  int64_t rollbacks = 0;
  while (!s.finished()) {
    const SearchStep r = s.step();
    EXPECT_TRUE(std::isfinite(r.loss)) << r.step;
    EXPECT_LT(r.gradient_norm, o.spike_factor * r.gradient_average + 1e-9) << r.step;
    rollbacks = r.rollbacks;
  }
  EXPECT_EQ(s.steps_done(), o.steps);
  return rollbacks;
}

TEST(Searcher, AnInjectedNanIsRolledBackAndTheSearchCompletes) {
  SearchOptions o = short_search();
  o.inject_nan_at = 4;
  at::manual_seed(1);
  Searcher s(test::phantom_set(kGrid, 3, 2), test::phantom_info(kGrid), o, test::made_up_costs(kGrid));
  EXPECT_EQ(run_to_end(s, o), 1);
  EXPECT_TRUE(at::isfinite(s.supernet().alpha()).all().item<bool>());
}

// A gradient spike (ω's loss × 10⁴ once) is a fault: rolled back at half the step sizes,
// and the search completes; the same search without it has no rollback (the guard does
// not fire on an ordinary run).
TEST(Searcher, AGradientSpikeIsRolledBackAndTheSearchCompletes) {
  for (const bool inject : {false, true}) {
    SearchOptions o = short_search();
    o.steps = 16;  // warm-up 3, then 11 search steps before the spike at step 15
    o.architecture_every = o.objective_every = 100;  // ω's steps alone
    if (inject) o.inject_spike_at = 15;
    at::manual_seed(1);
    Searcher s(test::phantom_set(kGrid, 3, 2), test::phantom_info(kGrid), o, test::made_up_costs(kGrid));
    EXPECT_EQ(run_to_end(s, o), inject ? 1 : 0);
  }
}

// λ's updates change the mix of the searched terms and keep their geometric mean (the
// overall weight against soft Dice); free, the mean moves too.
TEST(Searcher, TheObjectiveScaleStaysFixedUnlessFree) {
  const auto mean_log = [](const at::Tensor& l) {
    return (l[0].log() + l[1].log() + l[2].log() + l[4].log()).item<double>() / 4;
  };
  const at::Tensor start = at::tensor({1.0, 0.5, 0.25, 0.0, 1.0}, at::kDouble);
  for (const bool fixed : {true, false}) {
    SearchOptions o = short_search();
    o.objective_scale_fixed = fixed;
    o.architecture_every = 100;
    o.objective_every = 1;
    at::manual_seed(1);
    Searcher s(test::phantom_set(kGrid, 3, 2), test::phantom_info(kGrid), o, test::made_up_costs(kGrid));
    while (!s.finished()) s.step();
    EXPECT_FALSE(at::allclose(s.lambda(), start, 1e-4, 0)) << s.lambda();
    if (fixed) {
      EXPECT_NEAR(mean_log(s.lambda()), mean_log(start), 1e-12);
    } else {
      EXPECT_GT(std::abs(mean_log(s.lambda()) - mean_log(start)), 1e-4);
    }
  }
}

TEST(Searcher, SequentialModeFixesTheArchitectureForTheObjectivePhase) {
  SearchOptions o = short_search();
  o.mode = Mode::Sequential;
  o.steps = 10;
  at::manual_seed(1);
  Searcher s(test::phantom_set(kGrid, 3, 2), test::phantom_info(kGrid), o, test::made_up_costs(kGrid));
  std::vector<std::string> phases;
  registration::Genotype fixed;
  while (!s.finished()) {
    const SearchStep r = s.step();
    if (phases.empty() || phases.back() != phase_name(r.phase)) phases.push_back(phase_name(r.phase));
    if (r.phase == SearchPhase::Architecture) EXPECT_FALSE(r.objective_updated);
    if (r.phase == SearchPhase::Objective) {
      EXPECT_FALSE(r.architecture_updated);
      if (fixed.edges[0].empty()) fixed = s.derived();
      EXPECT_EQ(s.derived(), fixed);
    }
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"warmup", "architecture", "objective"}));
}

// The second stage of a proxy search: the architecture given (no edge searched), λ alone
// searched on it; and the converse, λ kept (no term searched) while α moves.
TEST(Searcher, WithNoEdgeSearchedOnlyTheObjectiveMoves) {
  SearchOptions o = short_search();
  o.steps = 4;
  o.edges = EdgeSet::None;
  auto info = test::phantom_info(kGrid);
  info.network.genotype.edges[9] = "conv_1x1";
  at::manual_seed(1);
  Searcher s(test::phantom_set(kGrid, 3, 2), info, o, test::made_up_costs(kGrid));
  const at::Tensor alpha = s.supernet().alpha().detach().clone();
  bool objective_updated = false;
  while (!s.finished()) {
    const SearchStep r = s.step();
    EXPECT_FALSE(r.architecture_updated);
    objective_updated = objective_updated || r.objective_updated;
  }
  EXPECT_TRUE(objective_updated);
  EXPECT_TRUE(at::equal(s.supernet().alpha(), alpha));
  EXPECT_FALSE(at::equal(s.lambda(), at::tensor({1.0, 0.5, 0.25, 0.0, 1.0}, at::kDouble)));
  EXPECT_EQ(s.derived(), info.network.genotype);
  for (double h : s.entropy()) EXPECT_EQ(h, 0.0);
}

TEST(Searcher, WithNoTermSearchedOnlyTheArchitectureMoves) {
  SearchOptions o = short_search();
  o.steps = 3;
  o.searched_terms.fill(false);
  at::manual_seed(1);
  Searcher s(test::phantom_set(kGrid, 3, 2), test::phantom_info(kGrid), o, test::made_up_costs(kGrid));
  const at::Tensor alpha = s.supernet().alpha().detach().clone();
  while (!s.finished()) EXPECT_FALSE(s.step().objective_updated);
  EXPECT_TRUE(at::equal(s.lambda(), at::tensor({1.0, 0.5, 0.25, 0.0, 1.0}, at::kDouble)));
  EXPECT_FALSE(at::equal(s.supernet().alpha(), alpha));
}

// After the warm-up (whole volumes), ω's steps on the supernet see a box of the pair.
TEST(Searcher, WeightCropTrainsTheSupernetOnABox) {
  SearchOptions o = short_search();
  o.path = Path::Mixed;
  o.steps = 2;
  o.warmup_fraction = 0.5;
  o.architecture_every = o.objective_every = 100;  // ω's steps alone
  o.weight_crop = 0.7;
  at::manual_seed(1);
  Searcher s(test::phantom_set(kGrid, 3, 2), test::phantom_info(kGrid), o, test::made_up_costs(kGrid));
  const int64_t box = int64_t(0.7 * kGrid) / 4 * 4;
  while (!s.finished()) {
    const SearchStep r = s.step();
    EXPECT_EQ(r.weight_voxels, r.phase == SearchPhase::Warmup ? kGrid * kGrid * kGrid : box * box * box) << r.step;
    EXPECT_TRUE(std::isfinite(r.loss));
  }
}

TEST(Searcher, RefusesDataWithoutLabelledValidationSubjects) {
  auto data = test::phantom_set(kGrid, 3, 2);
  for (auto& s : data.validation) s.labels = at::Tensor();
  try {
    Searcher s(data, test::phantom_info(kGrid), short_search(), test::made_up_costs(kGrid));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("labelled validation subjects"), std::string::npos) << e.what();
  }
}

TEST(Searcher, ABudgetBoundsTheDerivedNetwork) {
  SearchOptions o = short_search();
  const OpCosts c = test::made_up_costs(kGrid);
  o.budget_ms = predicted_ms(c, registration::Genotype::standard()) - 10;
  at::manual_seed(1);
  Searcher s(test::phantom_set(kGrid, 3, 2), test::phantom_info(kGrid), o, c);
  // Uniform over the allowed candidates would expect 556 ms: α starts projected within.
  EXPECT_LE(s.expected_forward_ms(), o.budget_ms);
  while (!s.finished()) {
    s.step();
    EXPECT_LE(s.expected_forward_ms(), o.budget_ms);
  }
  EXPECT_LE(predicted_ms(c, s.derived()), o.budget_ms);
}

}  // namespace
}  // namespace autoreg::search
