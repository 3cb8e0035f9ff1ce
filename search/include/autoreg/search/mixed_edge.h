// One searched edge of the supernet (supernet.h): the 8 candidate operations, registered
// under their names (e.g. "conv_3x3"), run as the shared PathState says.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <vector>

#include "autoreg/registration/autoreg_net.h"
#include "autoreg/search/supernet.h"

namespace autoreg::search {

class MixedEdgeImpl : public torch::nn::Module {
 public:
  MixedEdgeImpl(int index, const registration::EdgeLayout& layout, std::shared_ptr<const PathState> state);
  at::Tensor forward(const at::Tensor& x);
  // Candidate k (a plain edge: operation + LeakyReLU).
  torch::nn::Sequential& candidate(int k) { return candidates_[k]; }

 private:
  int index_;
  std::shared_ptr<const PathState> state_;
  std::vector<torch::nn::Sequential> candidates_;
};
TORCH_MODULE(MixedEdge);

}  // namespace autoreg::search
