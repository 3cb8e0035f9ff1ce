#include "autoreg/search/mixed_edge.h"

#include <ATen/ATen.h>

namespace autoreg::search {

MixedEdgeImpl::MixedEdgeImpl(int index, const registration::EdgeLayout& layout,
                             std::shared_ptr<const PathState> state)
    : index_(index), state_(std::move(state)) {
  for (const char* op : registration::kOperations) {
    candidates_.push_back(register_module(op, registration::make_edge(op, layout.in, layout.out, layout.stride)));
  }
}

at::Tensor MixedEdgeImpl::forward(const at::Tensor& x) {
  const PathState& s = *state_;
  switch (s.mode) {
    case PathMode::Fixed:
      return candidates_[s.chosen[index_]]->forward(x);
    case PathMode::Sampled: {
      const int k = s.chosen[index_];
      const at::Tensor y = candidates_[k]->forward(x);
      // The weight is 1: multiplying only matters when α is to get a gradient.
      return s.weights.requires_grad() ? y * s.weights[index_][k] : y;
    }
    case PathMode::Mixed: {
      at::Tensor sum;
      for (int k = 0; k < kCandidates; ++k) {
        if (!s.allowed[index_][k]) continue;
        const at::Tensor y = candidates_[k]->forward(x) * s.weights[index_][k];
        sum = sum.defined() ? sum + y : y;
      }
      return sum;
    }
  }
  return {};
}

}  // namespace autoreg::search
