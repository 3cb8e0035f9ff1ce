// CUDA kernels against the CPU kernels, in every build; skipped without a GPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>

#include <fstream>
#include <string>

#include "helpers.h"

namespace autoreg::test {
namespace {

using ops::Interpolation;
using ops::Padding;

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ops::cuda_available()) GTEST_SKIP() << ops::cuda_unavailable_reason();
  }
  static at::Tensor cuda(const at::Tensor& t) { return t.to(at::kCUDA); }
};

// CUDA is not loaded until asked for; asking loads the plugin, which registers the CUDA
// kernels (checked without a device: the dispatcher's table) and LibTorch's CUDA backend.
bool cuda_library_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libtorch_cuda.so") != std::string::npos) return true;
  }
  return false;
}

TEST(CudaPlugin, LoadedOnlyWhenAskedFor) {
  EXPECT_FALSE(cuda_library_mapped()) << "CPU work must not load LibTorch's CUDA backend";
  const bool available = ops::cuda_available();
#ifdef AUTOREG_WITH_CUDA
  EXPECT_TRUE(cuda_library_mapped()) << ops::cuda_unavailable_reason();
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("autoreg::warp", "");
  EXPECT_TRUE(op.hasKernelForDispatchKey(c10::DispatchKey::CUDA));
  if (!available) EXPECT_EQ(ops::cuda_unavailable_reason(), "no CUDA device is available here");
#else
  EXPECT_FALSE(available);
  EXPECT_NE(ops::cuda_unavailable_reason().find("no CUDA support"), std::string::npos);
#endif
}

TEST_F(Cuda, WarpForwardAndBackwardMatchCpu) {
  at::manual_seed(30);
  for (auto dtype : {at::kFloat, at::kDouble})
    for (auto interp : {Interpolation::Linear, Interpolation::Nearest})
      for (auto pad : {Padding::Zeros, Padding::Border}) {
        SCOPED_TRACE(std::string(name(interp)) + "/" + name(pad));
        const auto opts = at::TensorOptions().dtype(dtype);
        const at::Tensor image = at::randn({2, 3, 9, 10, 11}, opts);
        const at::Tensor disp = (at::rand({2, 3, 9, 10, 11}, opts) * 2 - 1) * 4;
        const at::Tensor grad = at::randn({2, 3, 9, 10, 11}, opts);
        const double tol = dtype == at::kFloat ? 1e-5 : 1e-12;
        std::vector<at::Tensor> results[2];
        for (int dev = 0; dev < 2; ++dev) {
          at::Tensor i = (dev ? cuda(image) : image).requires_grad_();
          at::Tensor d = (dev ? cuda(disp) : disp).requires_grad_();
          const at::Tensor out = ops::warp(i, d, interp, pad);
          const auto g = torch::autograd::grad({out}, {i, d}, {dev ? cuda(grad) : grad});
          results[dev] = {out.detach().cpu(), g[0].cpu(), g[1].cpu()};
        }
        for (int k = 0; k < 3; ++k) {
          if (results[0][k].abs().max().item<double>() == 0) {
            EXPECT_EQ(results[1][k].abs().max().item<double>(), 0.0) << "output " << k;
          } else {
            EXPECT_LT(relative_error(results[1][k], results[0][k]), tol) << "output " << k;
          }
        }
      }
}

TEST_F(Cuda, ComposeIntegrateJacobianMatchCpu) {
  at::manual_seed(31);
  const at::Tensor u = smooth_field(1, 16, 17, 18, 3.0);
  const at::Tensor v = smooth_field(1, 16, 17, 18, 3.0);
  EXPECT_LT(relative_error(ops::compose(cuda(u), cuda(v)).cpu(), ops::compose(u, v)), 1e-5);
  EXPECT_LT(relative_error(ops::integrate(cuda(v)).cpu(), ops::integrate(v)), 1e-4);
  EXPECT_LT(relative_error(ops::jacobian_determinant(cuda(u)).cpu(), ops::jacobian_determinant(u)),
            1e-5);
}

TEST_F(Cuda, IdentityEmptyAndNonContiguous) {
  const at::Tensor image = cuda(at::randn({1, 2, 5, 6, 7}));
  EXPECT_TRUE(at::equal(ops::warp(image, at::zeros({1, 3, 5, 6, 7}, image.options())), image));
  EXPECT_EQ(ops::warp(cuda(at::zeros({0, 1, 4, 5, 6})), cuda(at::zeros({0, 3, 4, 5, 6}))).numel(), 0);
  const at::Tensor cl = image.contiguous(at::MemoryFormat::ChannelsLast3d);
  const at::Tensor disp = cuda(at::rand({1, 3, 5, 6, 7}));
  EXPECT_TRUE(at::equal(ops::warp(cl, disp), ops::warp(image, disp)));
}

TEST_F(Cuda, MixedDevicesAreRejected) {
  try {
    ops::warp(cuda(at::zeros({1, 1, 4, 5, 6})), at::zeros({1, 3, 4, 5, 6}));
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("is on"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace autoreg::test
