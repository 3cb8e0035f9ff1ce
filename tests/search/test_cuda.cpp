// The networks, a training step and a search step on the GPU against the same on the
// CPU (ops/test_cuda.cpp covers the kernels). Skipped without a GPU, except under
// AUTOREG_REHEARSE_CUDA_TESTS=1 (scripts/device-check.sh --rehearse), where the "device"
// is the CPU: each test then compares the CPU with itself, which proves the test's own
// code before GPU time is spent on it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "autoreg/ops.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/network.h"
#include "autoreg/registration/train.h"
#include "autoreg/search/searcher.h"
#include "search_data.h"

namespace autoreg::search {
namespace {

constexpr int64_t kGrid = 16;

class CudaPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ops::cuda_available()) {
      device_ = at::Device(at::kCUDA);
    } else if (const char* r = std::getenv("AUTOREG_REHEARSE_CUDA_TESTS"); r && std::strcmp(r, "1") == 0) {
      device_ = at::Device(at::kCPU);
    } else {
      GTEST_SKIP() << ops::cuda_unavailable_reason();
    }
  }
  std::string device_name() const { return device_.is_cuda() ? "cuda" : "cpu"; }
  at::Device device_ = at::kCPU;
};

// The largest difference relative to the CPU tensor's largest magnitude.
double relative_difference(const at::Tensor& device, const at::Tensor& cpu) {
  const at::Tensor d = device.detach().cpu().to(at::kDouble), c = cpu.detach().to(at::kDouble);
  return (d - c).abs().max().item<double>() / std::max(1e-12, c.abs().max().item<double>());
}

// float32 convolutions (cuDNN against oneDNN) agree to about 1e-5 relative per layer;
// a few layers, integration and the loss's reductions stay within this.
constexpr double kForwardTolerance = 1e-3, kGradientTolerance = 1e-2;

TEST_F(CudaPaths, NetworksForwardAndBackwardMatchTheCpu) {
  registration::NetworkSpec unet;
  unet.kind = "unet";
  registration::NetworkSpec searched;
  searched.genotype = registration::Genotype::parse(
      "conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_1x1 conv_1x1 conv_3x3");
  for (const auto& spec : {registration::NetworkSpec{}, searched, unet}) {
    SCOPED_TRACE(spec.kind + " " + spec.genotype.to_string());
    const int64_t n = spec.kind == "unet" ? 32 : kGrid;
    at::manual_seed(5);
    auto cpu = registration::make_network(spec);
    at::manual_seed(5);
    auto dev = registration::make_network(spec);
    dev->to(device_);
    // Flow heads start at zero; random weights make the field, and every gradient, non-trivial.
    {
      c10::AutoGradMode no_grad(false);
      auto a = cpu->named_parameters(), b = dev->named_parameters();
      at::manual_seed(6);
      for (const auto& p : a) {
        const at::Tensor w = at::randn(p.value().sizes()) * 0.05;
        p.value().copy_(w);
        b[p.key()].copy_(w);
      }
    }
    at::manual_seed(7);
    const at::Tensor m = at::rand({1, 1, n, n, n}), f = at::rand({1, 1, n, n, n});
    const at::Tensor u_cpu = cpu->forward(m, f), u_dev = dev->forward(m.to(device_), f.to(device_));
    EXPECT_EQ(u_dev.device().type(), device_.type());
    EXPECT_LT(relative_difference(u_dev, u_cpu), kForwardTolerance);
    (u_cpu * u_cpu).mean().backward();
    (u_dev * u_dev).mean().backward();
    auto a = cpu->named_parameters(), b = dev->named_parameters();
    for (const auto& p : a) {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      EXPECT_LT(relative_difference(b[p.key()].grad(), p.value().grad()), kGradientTolerance) << p.key();
    }
  }
}

TEST_F(CudaPaths, ATrainingStepMatchesTheCpu) {
  const registration::TrainingSet data = test::phantom_set(kGrid, 2, 2);
  registration::ModelInfo info = test::phantom_info(kGrid);
  const auto trained = [&](const std::string& device) {
    at::manual_seed(1);
    registration::Model model = registration::make_model(info);
    registration::TrainOptions o;
    o.device = device;
    o.learning_rate = 1e-3;
    o.steps = 2;
    o.async_checkpoints = false;
    registration::Trainer trainer(model, data, o);
    double loss = 0;
    for (int i = 0; i < 2; ++i) loss = trainer.train_step().loss;
    model.network->to(at::kCPU);
    return std::make_pair(model, loss);
  };
  auto [cpu, cpu_loss] = trained("cpu");
  auto [dev, dev_loss] = trained(device_name());
  EXPECT_NEAR(dev_loss, cpu_loss, 1e-3 * std::abs(cpu_loss));
  // Two Adam steps of 1e-3 from the same start: the weights differ by far less than a step.
  auto a = cpu.network->named_parameters(), b = dev.network->named_parameters();
  for (const auto& p : a) EXPECT_LT((b[p.key()] - p.value()).abs().max().item<double>(), 2e-4) << p.key();
}

TEST_F(CudaPaths, ASearchStepMatchesTheCpu) {
  const registration::TrainingSet data = test::phantom_set(kGrid, 3, 2);
  const registration::ModelInfo info = test::phantom_info(kGrid);
  const auto searched = [&](const std::string& device) {
    SearchOptions o;
    o.device = device;
    o.steps = 3;
    o.warmup_fraction = 0.34;  // step 1 warms up, steps 2 and 3 move α; step 2 moves λ
    o.architecture_every = 1;
    o.objective_every = 2;
    o.async_checkpoints = false;
    o.seed = 2;
    at::manual_seed(1);
    auto s = std::make_unique<Searcher>(data, info, o, test::made_up_costs(kGrid));
    while (!s->finished()) s->step();
    return s;
  };
  auto cpu = searched("cpu");
  auto dev = searched(device_name());
  EXPECT_LT(relative_difference(dev->supernet().alpha(), cpu->supernet().alpha()), 1e-2);
  EXPECT_LT(relative_difference(dev->lambda(), cpu->lambda()), 1e-3);
  auto a = cpu->supernet().network_ptr()->named_parameters(), b = dev->supernet().network_ptr()->named_parameters();
  for (const auto& p : a) {
    EXPECT_LT((b[p.key()].cpu() - p.value()).abs().max().item<double>(), 5e-4) << p.key();
  }
  EXPECT_EQ(dev->derived(), cpu->derived());
}

}  // namespace
}  // namespace autoreg::search
