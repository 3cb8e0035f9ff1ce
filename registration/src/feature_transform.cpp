#include "autoreg/registration/feature_transform.h"

#include <ATen/ATen.h>

namespace autoreg::registration {

FeatureTransformImpl::FeatureTransformImpl(int64_t channels) {
  gamma = register_parameter("gamma", at::ones({channels}));
  beta = register_parameter("beta", at::zeros({channels}));
}

at::Tensor FeatureTransformImpl::forward(const at::Tensor& x) {
  const int64_t c = gamma.size(0);
  at::Tensor g = gamma.view({1, c, 1, 1, 1}), b = beta.view({1, c, 1, 1, 1});
  if (noise > 0 && is_training()) {
    const auto shape = std::vector<int64_t>{x.size(0), c, 1, 1, 1};
    g = g * (1.0 + noise * at::randn(shape, x.options()));
    b = b + noise * at::randn(shape, x.options());
  }
  return at::addcmul(b, x, g);
}

}  // namespace autoreg::registration
