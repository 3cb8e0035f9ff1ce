// autoreg::integrate: scaling and squaring, a composite of autoreg::compose, so it runs
// on every backend compose has and is differentiable through compose's autograd.
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>

#include "autoreg/ops.h"
#include "args.h"

namespace autoreg::ops::detail {
namespace {

// 2^30 sub-steps is far past any useful accuracy; more is certainly a mistake.
constexpr int64_t kMaxSteps = 30;

at::Tensor integrate_composite(const at::Tensor& velocity, int64_t steps) {
  const char* op = "autoreg::integrate";
  check_volume(op, "velocity", velocity, 3);
  TORCH_CHECK(steps >= 0 && steps <= kMaxSteps, op, ": steps must be in [0, ", kMaxSteps,
              "], got ", steps);
  at::Tensor u = velocity * std::ldexp(1.0, -static_cast<int>(steps));
  for (int64_t i = 0; i < steps; ++i) u = compose(u, u);
  return u;
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, CompositeImplicitAutograd, m) {
  m.impl("integrate", &integrate_composite);
}

}  // namespace autoreg::ops::detail
