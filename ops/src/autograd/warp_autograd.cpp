// Autograd of autoreg::warp and autoreg::compose: both differentiate through the
// registered autoreg::_warp_backward, so every backend that implements it gets
// gradients. First order only (double backward is not supported).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/TensorOperators.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <string>

#include "autoreg/ops.h"

namespace autoreg::ops::detail {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

at::Tensor call_warp(const at::Tensor& image, const at::Tensor& disp, c10::string_view interp,
                     c10::string_view pad) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autoreg::warp", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view,
                                         c10::string_view)>();
  return op.call(image, disp, interp, pad);
}

std::tuple<at::Tensor, at::Tensor> call_warp_backward(const at::Tensor& grad,
                                                      const at::Tensor& image,
                                                      const at::Tensor& disp,
                                                      c10::string_view interp,
                                                      c10::string_view pad,
                                                      std::array<bool, 2> mask) {
  static auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("autoreg::_warp_backward", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                    const at::Tensor&, c10::string_view,
                                                    c10::string_view, std::array<bool, 2>)>();
  return op.call(grad, image, disp, interp, pad, mask);
}

class WarpFunction : public torch::autograd::Function<WarpFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const Variable& image, const Variable& disp,
                               const std::string& interp, const std::string& pad) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor out = call_warp(image, disp, interp, pad);
    ctx->save_for_backward({image, disp});
    ctx->saved_data["interpolation"] = interp;
    ctx->saved_data["padding"] = pad;
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const std::string interp = ctx->saved_data["interpolation"].toStringRef();
    const std::string pad = ctx->saved_data["padding"].toStringRef();
    auto [grad_image, grad_disp] =
        call_warp_backward(grad_outputs[0], saved[0], saved[1], interp, pad,
                           {ctx->needs_input_grad(0), ctx->needs_input_grad(1)});
    return {grad_image, grad_disp, Variable(), Variable()};
  }
};

// compose(u, v) = v + warp(u, v, linear, border): the gradient w.r.t. v is warp's
// displacement gradient plus the incoming gradient itself.
class ComposeFunction : public torch::autograd::Function<ComposeFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const Variable& u, const Variable& v) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor out = ops::compose(u, v);  // redispatches below autograd
    ctx->save_for_backward({u, v});
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& grad = grad_outputs[0];
    const bool want_v = ctx->needs_input_grad(1);
    auto [grad_u, grad_v] = call_warp_backward(grad, saved[0], saved[1], "linear", "border",
                                               {ctx->needs_input_grad(0), want_v});
    if (want_v) grad_v = grad_v + grad;
    return {grad_u, grad_v};
  }
};

at::Tensor warp_autograd(const at::Tensor& image, const at::Tensor& disp,
                         c10::string_view interp, c10::string_view pad) {
  return WarpFunction::apply(image, disp, std::string(interp.data(), interp.size()),
                             std::string(pad.data(), pad.size()))[0];
}

at::Tensor compose_autograd(const at::Tensor& u, const at::Tensor& v) {
  return ComposeFunction::apply(u, v)[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, Autograd, m) {
  m.impl("warp", &warp_autograd);
  m.impl("compose", &compose_autograd);
}

}  // namespace autoreg::ops::detail
