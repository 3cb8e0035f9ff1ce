// The search space as one network (docs/design.md, "The method"; issue: the triple-level
// search): the AutoReg network whose searched edges are mixed edges over the 8 candidate
// operations, with the architecture parameters α (12 × 8, one row per edge, columns in
// registration::kOperations order) kept apart from the weights ω.
//
// How an edge runs is chosen before each forward pass:
//   mixed    DARTS (Liu et al., ICLR 2019): Σ_k softmax(α)_k · op_k(x), every allowed
//            candidate computed; for small grids and the tests.
//   sampled  GDAS (Dong & Yang, CVPR 2019): one candidate per edge, drawn by Gumbel-max
//            from softmax(α); its output times a straight-through one-hot weight (value
//            1, gradient that of softmax((log softmax(α) + g)/τ)), so a step costs about
//            one network and α still gets a gradient.
//   fixed    one given operation per edge, no α (a derived genotype, validation).
// Candidates can be masked out (a forward-time budget they cannot fit): a masked
// candidate has probability 0, is never sampled and never computed.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "autoreg/registration/autoreg_net.h"
#include "autoreg/registration/genotype.h"
#include "autoreg/registration/network.h"
#include "autoreg/registration/operations.h"
#include "autoreg/search/choices.h"

namespace autoreg::search {

inline constexpr int kEdges = registration::kGenotypeEdges;
inline constexpr int kCandidates = int(registration::kOperations.size());

// Which edges are searched: all (the default), deformation (the 6 D-cell edges, as the
// published code does; the feature cell keeps the base genotype's operations) or none
// (every edge keeps the base genotype's operation: only λ is searched). By name: the
// names of choices.h.
std::array<bool, kEdges> searched_edges(EdgeSet which);
std::array<bool, kEdges> searched_edges(const std::string& which);

// The index of an operation name in registration::kOperations; throws for an unknown one.
int operation_index(const std::string& name);

enum class PathMode { Mixed, Sampled, Fixed };

// What the mixed edges read during one forward pass (set by Supernet::use_*).
struct PathState {
  PathMode mode = PathMode::Mixed;
  at::Tensor weights;                    // 12×8: mixed: probabilities; sampled: straight-through one-hot
  std::array<int, kEdges> chosen{};      // sampled, fixed: the operation of each edge
  std::array<std::array<bool, kCandidates>, kEdges> allowed{};  // candidates that may run
};

class Supernet {
 public:
  // `base`: the network options (diffeomorphic, integration steps, matching cost) and the
  // genotype whose operations the edges that are not searched keep.
  Supernet(const registration::NetworkSpec& base, const std::array<bool, kEdges>& searched);

  registration::RegistrationNetwork& network() { return *network_; }
  std::shared_ptr<registration::AutoRegNet> network_ptr() const { return network_; }
  // ω: every weight of the network (all candidates of every edge).
  std::vector<at::Tensor> weights() const { return network_->parameters(); }
  // α, 12×8, requires grad. Rows of edges that are not searched are not used.
  at::Tensor& alpha() { return alpha_; }
  const at::Tensor& alpha() const { return alpha_; }
  const std::array<bool, kEdges>& searched() const { return searched_; }

  // Masks candidates out (allowed[e][k] false): they get probability 0 and never run.
  // Every searched edge keeps at least one candidate.
  void set_allowed(const std::array<std::array<bool, kCandidates>, kEdges>& allowed);
  const std::array<std::array<bool, kCandidates>, kEdges>& allowed() const { return state_->allowed; }

  // softmax(α) over the allowed candidates of each searched edge; an edge that is not
  // searched is one-hot at its fixed operation. Differentiable in α. 12×8.
  at::Tensor probabilities() const;

  // Prepare the next forward pass (call before each one). `alpha_grad`: whether the
  // pass gives α a gradient (α's own update) or treats α as a constant (ω's update).
  void use_mixed(bool alpha_grad);
  // Draws one candidate per searched edge with torch's default generator.
  void use_sampled(double tau, bool alpha_grad);
  // Re-uses the candidates of the last use_sampled (the same path, e.g. for the unrolled
  // step of the same update), with new weights from the current α.
  void reuse_sample(double tau, bool alpha_grad);
  void use_fixed(const registration::Genotype& genotype);
  const PathState& path() const { return *state_; }

  // The strongest allowed candidate of each searched edge; the base operation elsewhere.
  registration::Genotype argmax() const;

 private:
  void straight_through(double tau, bool alpha_grad);
  registration::NetworkSpec base_;
  std::array<bool, kEdges> searched_;
  std::shared_ptr<PathState> state_;
  std::shared_ptr<registration::AutoRegNet> network_;
  at::Tensor alpha_;
  at::Tensor gumbel_;  // the last draw's noise, 12×8
};

}  // namespace autoreg::search
