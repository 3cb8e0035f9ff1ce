#include "autoreg/search/mixed_edge.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/nn/init.h>

#include <cmath>
#include <stdexcept>

#include "autoreg/registration/operation_shape.h"
#include "autoreg/registration/operations.h"

namespace autoreg::search {
namespace {

using registration::OperationShape;

OperationShape shape_of(int k) {
  if (k < 0 || k >= kCandidates) throw std::out_of_range("candidate index out of range");
  return registration::kOperationShapes[size_t(k)];
}

// The centre k³ of a cubic kernel.
at::Tensor centre(const at::Tensor& kernel, int64_t k) {
  const int64_t start = (kernel.size(-1) - k) / 2;
  return kernel.narrow(2, start, k).narrow(3, start, k).narrow(4, start, k);
}

// A kernel of `size`³ whose centre 3³ has He initialisation (for the LeakyReLU(0.2) after
// every edge) and whose shell is zero: a larger candidate starts as the 3³ one.
at::Tensor centre_3x3_kernel(int64_t out, int64_t in_per_group, int64_t size) {
  const double gain = std::sqrt(2.0 / (1 + 0.2 * 0.2));
  at::Tensor k = at::zeros({out, in_per_group, size, size, size});
  c10::AutoGradMode no_grad(false);
  centre(k, 3).copy_(at::randn({out, in_per_group, 3, 3, 3}) * (gain / std::sqrt(27.0 * double(in_per_group))));
  return k;
}

}  // namespace

MixedEdgeImpl::MixedEdgeImpl(int index, const registration::EdgeLayout& layout,
                             std::shared_ptr<const PathState> state)
    : index_(index), stride_(layout.stride), state_(std::move(state)) {
  const int64_t in = layout.in, out = layout.out;
  dense_weight_ = register_parameter("dense_weight", centre_3x3_kernel(out, in, 7));
  dense_bias_ = register_parameter("dense_bias", at::zeros({out}));
  depthwise_weight_ = register_parameter("depthwise_weight", centre_3x3_kernel(in, 1, 5));
  depthwise_bias_ = register_parameter("depthwise_bias", at::zeros({in}));
  // A 1³ kernel: He for its own fan-in (torch's default layout for make_edge's pointwise).
  pointwise_weight_ = register_parameter(
      "pointwise_weight", at::randn({out, in, 1, 1, 1}) * (std::sqrt(2.0 / (1 + 0.2 * 0.2)) / std::sqrt(double(in))));
  pointwise_bias_ = register_parameter("pointwise_bias", at::zeros({out}));
}

std::map<std::string, at::Tensor> MixedEdgeImpl::plain_weights(int k) const {
  const OperationShape c = shape_of(k);
  if (!c.separable) return {{"0.weight", centre(dense_weight_, c.kernel)}, {"0.bias", dense_bias_}};
  return {{"0.weight", centre(depthwise_weight_, c.kernel)},
          {"0.bias", depthwise_bias_},
          {"1.weight", pointwise_weight_},
          {"1.bias", pointwise_bias_}};
}

at::Tensor MixedEdgeImpl::candidate(int k, const at::Tensor& x) const {
  const OperationShape c = shape_of(k);
  const int64_t padding = c.dilation * (c.kernel - 1) / 2;
  at::Tensor y;
  if (!c.separable) {
    y = registration::fast_conv3d(x, centre(dense_weight_, c.kernel), dense_bias_, stride_, padding, c.dilation);
  } else {
    y = registration::fast_conv3d(x, centre(depthwise_weight_, c.kernel), depthwise_bias_, stride_, padding, 1,
                                  x.size(1));
    y = registration::fast_conv3d(y, pointwise_weight_, pointwise_bias_, 1, 0, 1);
  }
  return at::leaky_relu(y, 0.2);
}

at::Tensor MixedEdgeImpl::forward(const at::Tensor& x) {
  const PathState& s = *state_;
  switch (s.mode) {
    case PathMode::Fixed:
      return candidate(s.chosen[index_], x);
    case PathMode::Sampled: {
      const int k = s.chosen[index_];
      const at::Tensor y = candidate(k, x);
      // The weight is 1: multiplying only matters when α is to get a gradient.
      return s.weights.requires_grad() ? y * s.weights[index_][k] : y;
    }
    case PathMode::Mixed: {
      at::Tensor sum;
      for (int k = 0; k < kCandidates; ++k) {
        if (!s.allowed[index_][k]) continue;
        const at::Tensor y = candidate(k, x) * s.weights[index_][k];
        sum = sum.defined() ? sum + y : y;
      }
      return sum;
    }
  }
  return {};
}

}  // namespace autoreg::search
