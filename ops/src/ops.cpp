// The operators' schemas (declared once, here) and the C++ entry points of
// include/autoreg/ops.h, which call through the dispatcher so that every backend and
// autograd apply. Kernels: cpu/ (CPU), cuda/ (CUDA), autograd/ (gradients);
// integrate.cpp and jacobian.cpp are composites built on these.
#include "autoreg/ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

namespace autoreg::ops {

TORCH_LIBRARY(autoreg, m) {
  m.def("warp(Tensor image, Tensor displacement, str interpolation='linear', "
        "str padding='zeros') -> Tensor");
  m.def("_warp_backward(Tensor grad, Tensor image, Tensor displacement, str interpolation, "
        "str padding, bool[2] output_mask) -> (Tensor, Tensor)");
  m.def("_warp_mse(Tensor image, Tensor target, Tensor displacement, Tensor? weight, str padding, "
        "bool with_grad) -> (Tensor, Tensor)");
  m.def("compose(Tensor u, Tensor v) -> Tensor");
  m.def("integrate(Tensor velocity, int steps=7) -> Tensor");
  m.def("jacobian_determinant(Tensor displacement) -> Tensor");
}

namespace {

// The dispatcher cannot route an undefined tensor to a kernel; say which one it is.
void check_defined(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
}

const char* name_of(Interpolation i) { return i == Interpolation::Linear ? "linear" : "nearest"; }
const char* name_of(Padding p) { return p == Padding::Zeros ? "zeros" : "border"; }

}  // namespace

at::Tensor warp(const at::Tensor& image, const at::Tensor& displacement,
                Interpolation interpolation, Padding padding) {
  check_defined("autoreg::warp", "image", image);
  check_defined("autoreg::warp", "displacement", displacement);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autoreg::warp", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view,
                                         c10::string_view)>();
  return op.call(image, displacement, name_of(interpolation), name_of(padding));
}

at::Tensor compose(const at::Tensor& u, const at::Tensor& v) {
  check_defined("autoreg::compose", "u", u);
  check_defined("autoreg::compose", "v", v);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autoreg::compose", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(u, v);
}

at::Tensor integrate(const at::Tensor& velocity, int64_t steps) {
  check_defined("autoreg::integrate", "velocity", velocity);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autoreg::integrate", "")
                       .typed<at::Tensor(const at::Tensor&, int64_t)>();
  return op.call(velocity, steps);
}

at::Tensor jacobian_determinant(const at::Tensor& displacement) {
  check_defined("autoreg::jacobian_determinant", "displacement", displacement);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autoreg::jacobian_determinant", "")
                       .typed<at::Tensor(const at::Tensor&)>();
  return op.call(displacement);
}

}  // namespace autoreg::ops
