// autoreg::jacobian_determinant, a composite of ATen operations (so it runs on every
// device and is differentiable, e.g. for folding penalties).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "args.h"

namespace autoreg::ops::detail {
namespace {

// ∂t/∂x along spatial dimension dim (2, 3 or 4): central differences inside, one-sided
// differences on the two faces, zero along an axis of length 1.
at::Tensor derivative(const at::Tensor& t, int64_t dim) {
  const int64_t n = t.size(dim);
  if (n < 2) return at::zeros_like(t);
  const at::Tensor first = t.narrow(dim, 1, 1) - t.narrow(dim, 0, 1);
  const at::Tensor last = t.narrow(dim, n - 1, 1) - t.narrow(dim, n - 2, 1);
  if (n == 2) return at::cat({first, last}, dim);
  const at::Tensor inner = (t.narrow(dim, 2, n - 2) - t.narrow(dim, 0, n - 2)) * 0.5;
  return at::cat({first, inner, last}, dim);
}

at::Tensor jacobian_determinant_composite(const at::Tensor& u) {
  check_volume("autoreg::jacobian_determinant", "displacement", u, 3);
  // J[c][k] = δ_ck + ∂u_c/∂x_k, each N×1×D×H×W.
  at::Tensor J[3][3];
  for (int64_t k = 0; k < 3; ++k) {
    const at::Tensor dk = derivative(u, 2 + k);
    for (int64_t c = 0; c < 3; ++c) {
      J[c][k] = dk.narrow(1, c, 1);
      if (c == k) J[c][k] = J[c][k] + 1.0;
    }
  }
  return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
         J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
         J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, CompositeImplicitAutograd, m) {
  m.impl("jacobian_determinant", &jacobian_determinant_composite);
}

}  // namespace autoreg::ops::detail
