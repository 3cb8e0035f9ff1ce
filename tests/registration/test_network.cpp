// The registration networks: genotypes, candidate operations, the AutoReg network and
// the U-Net baseline keep the input/output contract and are trainable end to end.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "autoreg/ops.h"
#include "autoreg/registration/autoreg_net.h"
#include "autoreg/registration/genotype.h"
#include "autoreg/registration/network.h"
#include "autoreg/registration/operations.h"

namespace autoreg::registration {
namespace {

int64_t count_parameters(RegistrationNetwork& net) {
  int64_t n = 0;
  for (const auto& p : net.parameters()) n += p.numel();
  return n;
}

TEST(Genotype, TextRoundTripAndComments) {
  Genotype g = Genotype::standard();
  g.edges[3] = "sep_conv_5x5";
  g.edges[11] = "dil_conv_7x7";
  EXPECT_EQ(Genotype::parse(g.to_string()), g);
  const std::string text = "# feature cell\nconv_3x3, conv_3x3 conv_3x3\nsep_conv_5x5 conv_3x3 conv_3x3\n"
                           "conv_3x3 conv_3x3 conv_3x3  # D at 1/4\nconv_3x3 conv_3x3 dil_conv_7x7\n";
  EXPECT_EQ(Genotype::parse(text), g);
}

TEST(Genotype, BadTextIsNamed) {
  try {
    Genotype::parse("conv_3x3 conv_3x3");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("12 operations"), std::string::npos) << e.what();
  }
  Genotype g = Genotype::standard();
  g.edges[7] = "conv_9x9";
  try {
    Genotype::parse(g.to_string());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("edge 7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("conv_9x9"), std::string::npos) << e.what();
  }
}

TEST(Operations, EveryCandidateKeepsOrHalvesTheGrid) {
  const at::Tensor x = at::rand({1, 4, 9, 8, 10});
  for (const char* op : kOperations) {
    for (int64_t stride : {1, 2}) {
      const at::Tensor y = make_edge(op, 4, 6, stride)->forward(x);
      EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 6, stride == 1 ? 9 : 5, stride == 1 ? 8 : 4,
                                                 stride == 1 ? 10 : 5}))
          << op << " stride " << stride;
    }
  }
  EXPECT_THROW(make_edge("max_pool", 4, 6, 1), std::invalid_argument);
}

class Networks : public ::testing::TestWithParam<const char*> {};

TEST_P(Networks, UntrainedIsNearIdentityAndEveryWeightGetsAGradient) {
  at::manual_seed(0);
  NetworkSpec spec;
  spec.kind = GetParam();
  auto net = make_network(spec);
  const at::Tensor moving = at::rand({1, 1, 16, 32, 16}), fixed = at::rand({1, 1, 16, 32, 16});
  const at::Tensor u = net->forward(moving, fixed);
  EXPECT_EQ(u.sizes(), (std::vector<int64_t>{1, 3, 16, 32, 16}));
  EXPECT_LT(u.abs().max().item<double>(), 1e-2);  // flow heads start near zero
  u.sum().backward();
  for (const auto& p : net->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  }
}

TEST_P(Networks, RejectsSizesItCannotHalve) {
  auto net = make_network(NetworkSpec{GetParam()});
  const at::Tensor odd = at::rand({1, 1, 18, 16, 16});
  EXPECT_THROW(net->forward(odd, odd), std::invalid_argument);
  EXPECT_THROW(net->forward(at::rand({1, 1, 16, 16, 16}), at::rand({1, 1, 16, 16, 32})), std::invalid_argument);
}

TEST_P(Networks, PlainModeAndBatches) {
  NetworkSpec spec{GetParam()};
  spec.diffeomorphic = false;
  auto net = make_network(spec);
  const at::Tensor u = net->forward(at::rand({2, 1, 16, 16, 16}), at::rand({2, 1, 16, 16, 16}));
  EXPECT_EQ(u.sizes(), (std::vector<int64_t>{2, 3, 16, 16, 16}));
}

TEST_P(Networks, TheInverseUndoesTheForwardMap) {
  at::manual_seed(4);
  NetworkSpec spec;
  spec.kind = GetParam();
  auto net = make_network(spec);
  // Flow heads scaled up from their near-zero start, for displacements of a few voxels.
  c10::AutoGradMode no_grad(false);
  for (auto& p : net->named_parameters()) {
    if (p.key().find("flow") != std::string::npos) p.value().mul_(p.key().find("bias") != std::string::npos ? 0 : 2e4);
  }
  const at::Tensor fixed = at::upsample_trilinear3d(at::rand({1, 1, 4, 4, 4}), {16, 32, 16}, true);
  const at::Tensor moving = at::upsample_trilinear3d(at::rand({1, 1, 4, 4, 4}), {16, 32, 16}, true);
  const auto both = net->forward_with_inverse(moving, fixed);
  EXPECT_TRUE(at::allclose(both[0], net->forward(moving, fixed), 1e-5, 1e-5));
  const double size = both[0].abs().max().item<double>();
  ASSERT_GT(size, 0.5) << "the test needs a displacement of some size";
  ASSERT_LT(size, 8.0);
  // Inverse after forward, and forward after inverse, are close to the identity: far
  // closer than the map itself, or than the map applied twice, away from the faces where
  // border sampling clips. (Untrained networks with scaled heads give rough fields, and
  // trilinear sampling of those leaves a residual: about 0.1-0.2 of the field's mean.)
  const auto mean_abs = [](const at::Tensor& u) {
    return u.narrow(2, 3, 10).narrow(3, 3, 26).narrow(4, 3, 10).abs().mean().item<double>();
  };
  const double there_and_back = mean_abs(ops::compose(both[1], both[0]));
  const double back_and_there = mean_abs(ops::compose(both[0], both[1]));
  const double twice = mean_abs(ops::compose(both[0], both[0]));
  EXPECT_LT(there_and_back, 0.3 * mean_abs(both[0])) << mean_abs(both[0]);
  EXPECT_LT(back_and_there, 0.3 * mean_abs(both[0])) << mean_abs(both[0]);
  EXPECT_LT(there_and_back, 0.15 * twice) << twice;
  spec.diffeomorphic = false;
  EXPECT_THROW(make_network(spec)->forward_with_inverse(moving, fixed), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Networks, ::testing::Values("autoreg", "unet"));

TEST(AutoRegNet, TheGenotypeDecidesTheOperations) {
  NetworkSpec cheap;
  cheap.genotype.edges.fill("conv_1x1");
  NetworkSpec wide;
  wide.genotype.edges.fill("conv_5x5");
  const int64_t standard = count_parameters(*make_network(NetworkSpec{}));
  EXPECT_LT(count_parameters(*make_network(cheap)), standard);
  EXPECT_GT(count_parameters(*make_network(wide)), standard);
  // The 3³ network: 6 feature edges, 2 × 3 deformation edges and two heads, all 3³.
  const int64_t c = 1;  // the matching-cost channel
  const int64_t expected =
      (1 * 16 + 16 * 16 + 16 * 16 + 16 * 32 + 32 * 32 + 32 * 32 + (64 + c) * 48 + 48 * 32 + 32 * 16 +
       (51 + c) * 48 + 48 * 32 + 32 * 16 + 2 * 16 * 3) * 27 +
      (16 + 16 + 16 + 32 + 32 + 32 + 48 + 32 + 16 + 48 + 32 + 16 + 3 + 3);
  EXPECT_EQ(standard, expected);
}

TEST(Networks, UnknownKindIsRefused) {
  EXPECT_THROW(make_network(NetworkSpec{"transformer"}), std::invalid_argument);
}

}  // namespace
}  // namespace autoreg::registration
