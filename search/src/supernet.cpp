#include "autoreg/search/supernet.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <stdexcept>

#include "autoreg/search/mixed_edge.h"

namespace autoreg::search {
namespace {

// A masked candidate's logit: finite (no inf − inf in log-softmax) and far enough below
// any real one that its probability is exactly 0 in float32 and float64.
constexpr double kMasked = -1e9;

// A 12×8 bool tensor of the allowed candidates.
at::Tensor mask_of(const PathState& state) {
  at::Tensor mask = at::zeros({kEdges, kCandidates}, at::kBool);
  auto m = mask.accessor<bool, 2>();
  for (int e = 0; e < kEdges; ++e) {
    for (int k = 0; k < kCandidates; ++k) m[e][k] = state.allowed[e][k];
  }
  return mask;
}

}  // namespace

std::array<bool, kEdges> searched_edges(EdgeSet which) {
  std::array<bool, kEdges> s{};
  if (which == EdgeSet::All) {
    s.fill(true);
  } else if (which == EdgeSet::Deformation) {
    for (int e = 6; e < kEdges; ++e) s[e] = true;
  }
  return s;
}

std::array<bool, kEdges> searched_edges(const std::string& which) { return searched_edges(parse_edge_set(which)); }

int operation_index(const std::string& name) {
  for (int k = 0; k < kCandidates; ++k) {
    if (name == registration::kOperations[k]) return k;
  }
  throw std::invalid_argument("unknown operation '" + name + "'");
}

Supernet::Supernet(const registration::NetworkSpec& base, const std::array<bool, kEdges>& searched)
    : base_(base), searched_(searched), state_(std::make_shared<PathState>()) {
  if (base.kind != "autoreg") throw std::invalid_argument("the supernet is an AutoReg network");
  for (auto& row : state_->allowed) row.fill(true);
  for (int e = 0; e < kEdges; ++e) state_->chosen[e] = operation_index(base.genotype.edges[e]);
  const auto factory = [this](int e, const registration::EdgeLayout& layout) -> registration::Edge {
    if (!searched_[e]) return registration::plain_edge(base_.genotype.edges[e], layout);
    MixedEdge edge(e, layout, state_);
    return {edge.ptr(), [m = edge.ptr()](const at::Tensor& x) { return m->forward(x); }};
  };
  network_ = std::make_shared<registration::AutoRegNet>(base, factory);
  // α starts at 0 (all candidates equally likely), as in DARTS and GDAS.
  alpha_ = at::zeros({kEdges, kCandidates}, at::kFloat).set_requires_grad(true);
}

void Supernet::set_allowed(const std::array<std::array<bool, kCandidates>, kEdges>& allowed) {
  for (int e = 0; e < kEdges; ++e) {
    if (!searched_[e]) continue;
    bool any = false;
    for (bool a : allowed[e]) any = any || a;
    if (!any) throw std::invalid_argument(std::string("edge ") + registration::edge_layout(true)[e].name +
                                          ": every candidate is masked out");
  }
  state_->allowed = allowed;
}

at::Tensor Supernet::probabilities() const {
  at::Tensor fixed = at::zeros({kEdges, kCandidates}, alpha_.options().requires_grad(false));
  at::Tensor searched = at::zeros({kEdges, 1}, at::kBool);
  for (int e = 0; e < kEdges; ++e) {
    searched[e][0] = searched_[e];
    fixed[e][operation_index(base_.genotype.edges[e])] = 1;
  }
  const at::Tensor p = at::softmax(alpha_.masked_fill(~mask_of(*state_), kMasked), 1);
  return at::where(searched, p, fixed);
}

void Supernet::use_mixed(bool alpha_grad) {
  state_->mode = PathMode::Mixed;
  const at::Tensor p = probabilities();
  state_->weights = alpha_grad ? p : p.detach();
}

void Supernet::straight_through(double tau, bool alpha_grad) {
  const at::Tensor a = alpha_grad ? alpha_ : alpha_.detach();
  const at::Tensor soft = at::softmax((at::log_softmax(a.masked_fill(~mask_of(*state_), kMasked), 1) + gumbel_) / tau, 1);
  at::Tensor hard = at::zeros_like(soft);
  for (int e = 0; e < kEdges; ++e) hard[e][state_->chosen[e]] = 1;
  state_->weights = hard - soft.detach() + soft;
}

void Supernet::use_sampled(double tau, bool alpha_grad) {
  if (!(tau > 0)) throw std::invalid_argument("the Gumbel temperature must be > 0");
  state_->mode = PathMode::Sampled;
  {
    c10::AutoGradMode no_grad(false);
    // Gumbel-max: argmax(log softmax(α) + g) is a draw from softmax(α), whatever τ.
    const at::Tensor uniform = at::rand({kEdges, kCandidates}, at::kDouble).clamp(1e-300, 1.0 - 1e-16);
    gumbel_ = (-at::log(-at::log(uniform))).to(alpha_.scalar_type());
    const at::Tensor p = probabilities();
    const at::Tensor score = at::where(p > 0, at::log(p.clamp_min(1e-30)) + gumbel_, at::full_like(p, kMasked));
    const at::Tensor best = score.argmax(1);
    for (int e = 0; e < kEdges; ++e) {
      state_->chosen[e] = searched_[e] ? int(best[e].item<int64_t>()) : operation_index(base_.genotype.edges[e]);
    }
  }
  straight_through(tau, alpha_grad);
}

void Supernet::reuse_sample(double tau, bool alpha_grad) {
  if (!gumbel_.defined()) throw std::logic_error("reuse_sample before use_sampled");
  state_->mode = PathMode::Sampled;
  straight_through(tau, alpha_grad);
}

void Supernet::use_fixed(const registration::Genotype& genotype) {
  state_->mode = PathMode::Fixed;
  for (int e = 0; e < kEdges; ++e) {
    const int k = operation_index(genotype.edges[e]);
    if (!searched_[e] && genotype.edges[e] != base_.genotype.edges[e]) {
      throw std::invalid_argument(std::string("edge ") + registration::edge_layout(true)[e].name +
                                  " is not searched: it can only run " + base_.genotype.edges[e]);
    }
    state_->chosen[e] = k;
  }
  state_->weights = at::Tensor();
}

registration::Genotype Supernet::argmax() const {
  c10::AutoGradMode no_grad(false);
  const at::Tensor best = probabilities().argmax(1);
  registration::Genotype g = base_.genotype;
  for (int e = 0; e < kEdges; ++e) {
    if (searched_[e]) g.edges[e] = registration::kOperations[best[e].item<int64_t>()];
  }
  return g;
}

}  // namespace autoreg::search
