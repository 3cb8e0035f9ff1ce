#include "autoreg/registration/network.h"

#include <ATen/ATen.h>

#include <sstream>
#include <stdexcept>

#include "autoreg/registration/autoreg_net.h"
#include "autoreg/registration/unet.h"

namespace autoreg::registration {

std::shared_ptr<RegistrationNetwork> make_network(const NetworkSpec& spec) {
  if (spec.integration_steps < 0) throw std::invalid_argument("integration steps must be >= 0");
  if (spec.kind == "autoreg") return std::make_shared<AutoRegNet>(spec);
  if (spec.kind == "unet") return std::make_shared<UNet>(spec);
  throw std::invalid_argument("unknown network kind '" + spec.kind + "' (autoreg or unet)");
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
