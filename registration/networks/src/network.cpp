#include "autoreg/registration/network.h"

#include <ATen/ATen.h>

#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "autoreg/registration/autoreg_net.h"
#include "autoreg/registration/unet.h"
#include "fnv1a.h"

namespace autoreg::registration {

std::shared_ptr<RegistrationNetwork> make_network(const NetworkSpec& spec) {
  if (spec.integration_steps < 0) throw std::invalid_argument("integration steps must be >= 0");
  std::shared_ptr<RegistrationNetwork> network;
  if (spec.kind == "autoreg") network = std::make_shared<AutoRegNet>(spec);
  if (spec.kind == "unet") network = std::make_shared<UNet>(spec);
  if (network) {
    if (spec.feature_transforms) network->add_feature_transforms();
    return network;
  }
  throw std::invalid_argument("unknown network kind '" + spec.kind + "' (autoreg or unet)");
}

void RegistrationNetwork::add_feature_transforms() {
  if (!transforms_.empty()) return;
  auto holder = std::make_shared<torch::nn::Module>();
  for (const auto& [name, channels] : operations()) {
    transforms_.push_back(holder->register_module(name, FeatureTransform(channels)));
  }
  // On the device (and in the mode) the network is.
  const auto existing = parameters();
  if (!existing.empty()) holder->to(existing.front().device());
  holder->train(is_training());
  register_module("ftm", holder);
}

std::vector<at::Tensor> RegistrationNetwork::feature_transform_parameters() const {
  std::vector<at::Tensor> out;
  for (const auto& t : transforms_) {
    out.push_back(t->gamma);
    out.push_back(t->beta);
  }
  return out;
}

std::vector<at::Tensor> RegistrationNetwork::weight_parameters() const {
  std::vector<at::Tensor> out;
  for (const auto& p : named_parameters()) {
    if (p.key().rfind("ftm.", 0) != 0) out.push_back(p.value());
  }
  return out;
}

void RegistrationNetwork::set_feature_noise(double noise) {
  if (transforms_.empty()) throw std::logic_error("feature noise needs the feature transformations");
  for (auto& t : transforms_) t->noise = noise;
}

std::string weights_checksum(const RegistrationNetwork& network) {
  uint64_t h = detail::kFnvOffset;
  for (const at::Tensor& w : network.weight_parameters()) {
    const at::Tensor t = w.detach().to(at::kCPU).contiguous();
    h = detail::fnv1a(static_cast<const char*>(t.data_ptr()), t.nbytes(), h);
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, h);
  return hex;
}

void check_network_input(const at::Tensor& moving, const at::Tensor& fixed, int64_t multiple) {
  if (moving.dim() != 5 || moving.size(1) != 1 || moving.sizes() != fixed.sizes()) {
    std::ostringstream s;
    s << "the network takes moving and fixed images N×1×D×H×W of one size, got "
      << moving.sizes() << " and " << fixed.sizes();
    throw std::invalid_argument(s.str());
  }
  for (int64_t d = 2; d < 5; ++d) {
    if (moving.size(d) <= 0 || moving.size(d) % multiple != 0) {
      std::ostringstream s;
      s << "the network needs every spatial size to be a multiple of " << multiple << ", got "
        << moving.sizes().slice(2);
      throw std::invalid_argument(s.str());
    }
  }
}

void throw_no_inverse() {
  throw std::logic_error(
      "this model's network is not diffeomorphic (its fields are not velocities), so it has no "
      "inverse of its own; register without the inverse field, or with a diffeomorphic model");
}

at::Tensor upsample_field(const at::Tensor& u) {
  return at::upsample_trilinear3d(u, {2 * u.size(2), 2 * u.size(3), 2 * u.size(4)},
                                  /*align_corners=*/false) *
         2.0;
}

}  // namespace autoreg::registration
