// The discrete search (registration/discrete.h) finds a 20 mm motion that slides against
// a still half of the volume, where instance optimisation from zero does not, and
// instance optimisation started from its field keeps it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <iostream>

#include "autoreg/registration/discrete.h"
#include "autoreg/registration/instance.h"

namespace autoreg::test {
namespace {

namespace reg = autoreg::registration;

TEST(DiscreteSearch, FindsA20MillimetreSlideThatInstanceOptimisationMisses) {
  at::manual_seed(5);
  const int64_t D = 20, H = 48, W = 72, shift = 10;  // 2 mm voxels: 20 mm along W
  // Texture at several scales, wider than the volume so that the shifted half has data.
  const at::Tensor texture = at::upsample_trilinear3d(at::rand({1, 1, 10, 24, 41}), {D, H, W + shift}, true) +
                             0.5 * at::upsample_trilinear3d(at::rand({1, 1, 5, 12, 21}), {D, H, W + shift}, true);
  const at::Tensor fixed = texture.narrow(4, shift, W).contiguous();
  // The upper half (h < H/2) moved by `shift` voxels along W, the lower half still:
  // moving(x + u(x)) = fixed(x) with u = (0, 0, shift) above, 0 below.
  at::Tensor moving = fixed.clone();
  moving.narrow(3, 0, H / 2).copy_(texture.narrow(4, 0, W).narrow(3, 0, H / 2));
  at::Tensor truth = at::zeros({1, 3, D, H, W});
  truth.select(1, 2).narrow(2, 0, H / 2).fill_(double(shift));
  // Scored away from the faces and the sliding boundary (6 voxels).
  const auto error = [&](const at::Tensor& u) {
    const at::Tensor e = (u - truth).pow(2).sum(1).sqrt().narrow(1, 2, D - 4).narrow(3, 6, W - 12);
    return 0.5 * (e.narrow(2, 4, H / 2 - 10).mean().item<double>() + e.narrow(2, H / 2 + 6, H / 2 - 10).mean().item<double>());
  };
  reg::DiscreteOptions o;
  o.radius_mm = 24;
  o.spacing = {2, 2, 2};
  const at::Tensor found = reg::discrete_displacement(fixed, moving, o);
  ASSERT_EQ(found.sizes(), truth.sizes());
  reg::InstanceOptions io;
  io.spacing = {2, 2, 2};
  const at::Tensor continuous = reg::fit_displacement(fixed, moving, io);
  // Instance optimisation started from the search's field (its initial velocity).
  io.initial_velocity = found;
  const at::Tensor both = reg::fit_displacement(fixed, moving, io);
  const double before = error(at::zeros_like(truth)), discrete = error(found), gradient = error(continuous),
               continued = error(both);
  std::cout << "mean endpoint error (voxels): before " << before << ", discrete search " << discrete
            << ", instance optimisation alone " << gradient << ", from the search's field " << continued << std::endl;
  EXPECT_LT(discrete, 0.25 * before);
  EXPECT_LT(discrete, 0.5 * gradient);
  EXPECT_LT(continued, 0.5 * gradient);
  // A cost volume larger than the memory allowed (72 MiB here, 7.2 MiB a grid slice) is
  // searched slab by slab, one grid slice at a time with 1 MiB, to the same field.
  const reg::DiscreteOptions whole = o;
  o.max_cost_mib = 1;
  EXPECT_TRUE(at::equal(reg::discrete_displacement(fixed, moving, o), found));
  // Slabs of several slices and a shorter last one (40 MiB: 3 + 3 + 3 + 1 slices), with a
  // mask whose edge pools to exactly 0.5 (image slices 0-4 without data: grid slice 2 is
  // half outside, and left out), give the whole volume's field too.
  o.max_cost_mib = 40;
  EXPECT_TRUE(at::equal(reg::discrete_displacement(fixed, moving, o), found));
  at::Tensor mask = at::ones_like(fixed);
  mask.narrow(2, 0, 5).zero_();
  EXPECT_TRUE(at::equal(reg::discrete_displacement(fixed, moving, o, mask),
                        reg::discrete_displacement(fixed, moving, whole, mask)));
}

}  // namespace
}  // namespace autoreg::test
