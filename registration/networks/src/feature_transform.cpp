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
    // One draw for the whole batch: the moving and fixed scans of a pair (which the
    // AutoReg net's feature cell sees as two samples) come from one scanner, so they get
    // one shift of domain. The shift is in units of the channel's spread: these features
    // are not normalised, unlike the batch-normalised ones of Tseng et al. (Drawn per
    // sample and at an absolute scale, noise 0.1 stopped the default recipe learning: its
    // fields stayed near zero for 200 steps.)
    const auto shape = std::vector<int64_t>{1, c, 1, 1, 1};
    const at::Tensor spread = x.detach().std(at::IntArrayRef{0, 2, 3, 4}, /*unbiased=*/false, /*keepdim=*/true);
    g = g * (1.0 + noise * at::randn(shape, x.options()));
    b = b + noise * spread * at::randn(shape, x.options());
  }
  return at::addcmul(b, x, g);
}

}  // namespace autoreg::registration
