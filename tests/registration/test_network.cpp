// The registration networks: genotypes, candidate operations, the AutoReg network and
// the U-Net baseline keep the input/output contract and are trainable end to end.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

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
