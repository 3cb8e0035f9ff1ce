#include "autoreg/registration/unet.h"

#include <ATen/ATen.h>

#include <string>

#include "autoreg/ops.h"
#include "autoreg/registration/operations.h"

namespace autoreg::registration {

UNet::UNet(const NetworkSpec& spec) : spec_(spec) {
  const int64_t enc[4] = {16, 32, 32, 32}, dec[4] = {32, 32, 32, 32}, rest[3] = {32, 16, 16};
  int64_t channels = 2;
  for (int l = 0; l < 4; ++l) {
    encoder_.push_back(register_module("enc" + std::to_string(l), make_edge("conv_3x3", channels, enc[l], 1)));
    operations_.emplace_back("enc" + std::to_string(l), enc[l]);
    channels = enc[l];
  }
  for (int l = 0; l < 4; ++l) {
    decoder_.push_back(register_module("dec" + std::to_string(l), make_edge("conv_3x3", channels, dec[l], 1)));
    operations_.emplace_back("dec" + std::to_string(l), dec[l]);
    channels = dec[l] + enc[3 - l];  // after upsampling, the skip connection joins
  }
  for (int l = 0; l < 3; ++l) {
    remaining_.push_back(register_module("rest" + std::to_string(l), make_edge("conv_3x3", channels, rest[l], 1)));
    operations_.emplace_back("rest" + std::to_string(l), rest[l]);
    channels = rest[l];
  }
  flow_ = register_module("flow", make_flow_head(channels));
}

std::vector<std::pair<std::string, int64_t>> UNet::operations() const { return operations_; }

at::Tensor UNet::forward(const at::Tensor& moving, const at::Tensor& fixed) {
  return run(moving, fixed, false)[0];
}

std::array<at::Tensor, 2> UNet::forward_with_inverse(const at::Tensor& moving, const at::Tensor& fixed) {
  if (!spec_.diffeomorphic) throw_no_inverse();
  return run(moving, fixed, true);
}

std::array<at::Tensor, 2> UNet::run(const at::Tensor& moving, const at::Tensor& fixed, bool inverse) {
  check_network_input(moving, fixed, size_multiple());
  at::Tensor x = at::cat({moving, fixed}, 1);
  std::vector<at::Tensor> skips;
  size_t op = 0;
  for (auto& level : encoder_) {
    x = transformed(op++, level->forward(x));
    skips.push_back(x);
    x = at::max_pool3d(x, {2, 2, 2});
  }
  for (auto& level : decoder_) {
    x = transformed(op++, level->forward(x));
    x = at::upsample_nearest3d(x, {2 * x.size(2), 2 * x.size(3), 2 * x.size(4)});
    x = at::cat({x, skips.back()}, 1);
    skips.pop_back();
  }
  for (auto& conv : remaining_) x = transformed(op++, conv->forward(x));
  const at::Tensor v = flow_->forward(x);
  if (!spec_.diffeomorphic) return {v, at::Tensor()};
  const at::Tensor half = at::upsample_trilinear3d(v, {v.size(2) / 2, v.size(3) / 2, v.size(4) / 2},
                                                   /*align_corners=*/false) * 0.5;
  return {upsample_field(ops::integrate(half, spec_.integration_steps)),
          inverse ? upsample_field(ops::integrate(-half, spec_.integration_steps)) : at::Tensor()};
}

}  // namespace autoreg::registration
