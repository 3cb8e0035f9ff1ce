// ops::warped_mse: the fused CPU kernel (autoreg::_warp_mse) under a gradient with
// respect to the displacement, or the composite of warp and the mean where no fused
// kernel exists (CUDA).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>

#include <optional>

#include "autoreg/ops.h"

namespace autoreg::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

std::tuple<at::Tensor, at::Tensor> call_warp_mse(const at::Tensor& image, const at::Tensor& target,
                                                 const at::Tensor& disp, const std::optional<at::Tensor>& weight,
                                                 c10::string_view padding, bool with_grad) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autoreg::_warp_mse", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                                 const at::Tensor&, const std::optional<at::Tensor>&,
                                                                 c10::string_view, bool)>();
  return op.call(image, target, disp, weight, padding, with_grad);
}

// The gradient is computed with the loss (one pass) and kept for backward.
class WarpMseFunction : public torch::autograd::Function<WarpMseFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const Variable& disp, const at::Tensor& image,
                               const at::Tensor& target, const std::optional<at::Tensor>& weight,
                               const std::string& padding) {
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [loss, grad] = call_warp_mse(image, target, disp, weight, padding, true);
    ctx->save_for_backward({grad});
    return {loss};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_outputs) {
    const at::Tensor grad = ctx->get_saved_variables()[0];
    return {grad * grad_outputs[0], Variable(), Variable(), Variable(), Variable()};
  }
};

}  // namespace

at::Tensor warped_mse(const at::Tensor& image, const at::Tensor& target, const at::Tensor& displacement,
                      Padding padding, const at::Tensor& weight) {
  TORCH_CHECK(image.defined() && target.defined() && displacement.defined(),
              "autoreg::warped_mse: image, target and displacement must be defined");
  const char* pad = padding == Padding::Zeros ? "zeros" : "border";
  if (displacement.is_cpu()) {
    const std::optional<at::Tensor> w = weight.defined() ? std::optional<at::Tensor>(weight.detach()) : std::nullopt;
    if (displacement.requires_grad()) {
      return WarpMseFunction::apply(displacement, image.detach(), target.detach(), w, pad)[0];
    }
    return std::get<0>(call_warp_mse(image, target, displacement, w, pad, false));
  }
  const at::Tensor warped = warp(image.detach(), displacement, Interpolation::Linear, padding);
  const at::Tensor diff = (warped - target.detach()).pow(2);
  if (!weight.defined()) return diff.mean();
  const at::Tensor w = weight.detach();
  return (diff.mean(1, /*keepdim=*/true) * w).sum() / (w.sum() + kEmptyWeight);
}

}  // namespace autoreg::ops
