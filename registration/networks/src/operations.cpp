#include "autoreg/registration/operations.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>

#include <stdexcept>

#include "autoreg/registration/operation_shape.h"

namespace autoreg::registration {
namespace {

FastConv3d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                int64_t groups = 1) {
  return FastConv3d(in, out, kernel, stride, dilation, groups);
}

}  // namespace

FastConv3dImpl::FastConv3dImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                               int64_t groups)
    : torch::nn::Conv3dImpl(torch::nn::Conv3dOptions(in, out, kernel)
                                .stride(stride)
                                .padding(dilation * (kernel - 1) / 2)
                                .dilation(dilation)
                                .groups(groups)),
      padding_(dilation * (kernel - 1) / 2),
      stride_(stride),
      dilation_(dilation),
      groups_(groups) {
  // He initialisation for the LeakyReLU(0.2) that follows every edge: activations keep
  // their scale through the cells. (torch's default, kaiming_uniform with a = √5, shrinks
  // them by about half per layer, and a deep stack of edges then trains far slower.)
  torch::nn::init::kaiming_normal_(weight, 0.2, torch::kFanIn, torch::kLeakyReLU);
  torch::nn::init::zeros_(bias);
}

at::Tensor fast_conv3d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, int64_t stride,
                       int64_t padding, int64_t dilation, int64_t groups) {
  if (!(input.is_cpu() && input.scalar_type() == at::kFloat && at::hasMKLDNN())) {
    return at::conv3d(input, weight, bias, {stride, stride, stride}, {padding, padding, padding},
                      {dilation, dilation, dilation}, groups);
  }
  const auto conv = [&](const at::Tensor& x) {
    return at::mkldnn_convolution(x.contiguous(at::MemoryFormat::ChannelsLast3d), weight.contiguous(), bias,
                                  {padding, padding, padding}, {stride, stride, stride},
                                  {dilation, dilation, dilation}, groups);
  };
  // The backward pass goes through torch's dispatch, which picks the slow native kernel
  // for one small volume (N = 1 and C·D·H ≤ 20480, kernels ≤ 3, no groups); for two it
  // picks oneDNN. So a small single volume is convolved as a batch of two, the second
  // a copy whose output is dropped (its gradient is zero): twice the fast work instead
  // of the slow kernel's eight to ten times.
  const bool slow_backward = input.requires_grad() || weight.requires_grad();
  if (slow_backward && c10::GradMode::is_enabled() && input.size(0) == 1 && groups == 1 &&
      weight.size(-1) <= 3 && input.size(1) * input.size(2) * input.size(3) <= 20480) {
    return conv(at::cat({input, input}, 0)).narrow(0, 0, 1);
  }
  return conv(input);
}

at::Tensor FastConv3dImpl::forward(const at::Tensor& input) {
  return fast_conv3d(input, weight, bias, stride_, padding_, dilation_, groups_);
}

FastConv3d make_flow_head(int64_t in) {
  FastConv3d head(in, 3, 3);
  torch::nn::init::normal_(head->weight, 0.0, 1e-5);
  torch::nn::init::zeros_(head->bias);
  return head;
}

bool is_operation(const std::string& name) {
  for (const char* op : kOperations) {
    if (name == op) return true;
  }
  return false;
}

OperationShape operation_shape(const std::string& name) {
  static_assert(kOperationShapes.size() == kOperations.size());
  std::string known;
  for (size_t k = 0; k < kOperations.size(); ++k) {
    if (name == kOperations[k]) return kOperationShapes[k];
    known += std::string(known.empty() ? "" : ", ") + kOperations[k];
  }
  throw std::invalid_argument("unknown operation '" + name + "' (known: " + known + ")");
}

torch::nn::Sequential make_edge(const std::string& name, int64_t in, int64_t out, int64_t stride) {
  if (stride != 1 && stride != 2) throw std::invalid_argument("make_edge: stride must be 1 or 2");
  const OperationShape shape = operation_shape(name);
  torch::nn::Sequential edge;
  if (shape.separable) {
    edge->push_back(conv(in, in, shape.kernel, stride, shape.dilation, /*groups=*/in));
    edge->push_back(conv(in, out, 1, 1, 1));
  } else {
    edge->push_back(conv(in, out, shape.kernel, stride, shape.dilation));
  }
  edge->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)));
  return edge;
}

}  // namespace autoreg::registration
