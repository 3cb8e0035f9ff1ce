// autoreg::warp forward: against the slow reference and torch's grid_sample, and the
// properties a reader can check by hand.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <set>
#include <tuple>

#include "helpers.h"

namespace autoreg::test {
namespace {

using ops::Interpolation;
using ops::Padding;

struct Case {
  at::ScalarType dtype;
  Interpolation interp;
  Padding pad;
};

class WarpCases : public ::testing::TestWithParam<Case> {};

TEST_P(WarpCases, MatchesReference) {
  const Case c = GetParam();
  at::manual_seed(1);
  const auto opts = at::TensorOptions().dtype(c.dtype);
  const at::Tensor image = at::randn({2, 3, 6, 7, 9}, opts);
  // Up to 4 voxels: many samples fall outside the 6×7×9 volume, exercising padding.
  const at::Tensor disp = (at::rand({2, 3, 6, 7, 9}, opts) * 2 - 1) * 4;
  const at::Tensor got = ops::warp(image, disp, c.interp, c.pad);
  const at::Tensor want = reference_warp(image, disp, c.interp, c.pad);
  const double tol = c.dtype == at::kFloat ? 1e-6 : 1e-13;
  EXPECT_LT(relative_error(got, want), tol) << name(c.interp) << "/" << name(c.pad);
}

TEST_P(WarpCases, MatchesGridSample) {
  const Case c = GetParam();
  at::manual_seed(2);
  const auto opts = at::TensorOptions().dtype(c.dtype);
  const at::Tensor image = at::randn({1, 2, 11, 13, 17}, opts);
  const at::Tensor disp = (at::rand({1, 3, 11, 13, 17}, opts) * 2 - 1) * 5;
  const at::Tensor got = ops::warp(image, disp, c.interp, c.pad);
  const at::Tensor want = grid_sample_warp(image, disp, c.interp, c.pad);
  const double tol = c.dtype == at::kFloat ? 1e-5 : 1e-12;
  if (c.interp == Interpolation::Nearest) {
    // grid_sample rounds a position recomputed from the normalised grid; they agree
    // except at exact ties, which random positions avoid.
    EXPECT_TRUE(at::equal(got, want)) << name(c.pad);
  } else {
    EXPECT_LT(relative_error(got, want), tol) << name(c.pad);
  }
}

TEST_P(WarpCases, IdentityFieldReturnsInputExactly) {
  const Case c = GetParam();
  const auto opts = at::TensorOptions().dtype(c.dtype);
  const at::Tensor image = at::randn({2, 2, 5, 6, 7}, opts);
  const at::Tensor disp = at::zeros({2, 3, 5, 6, 7}, opts);
  EXPECT_TRUE(at::equal(ops::warp(image, disp, c.interp, c.pad), image));
}

TEST_P(WarpCases, IntegerShiftMovesVoxelsExactly) {
  const Case c = GetParam();
  const auto opts = at::TensorOptions().dtype(c.dtype);
  const int64_t D = 6, H = 7, W = 8;
  const at::Tensor image = at::randn({1, 1, D, H, W}, opts);
  const int64_t s[3] = {1, -2, 3};
  at::Tensor disp = at::empty({1, 3, D, H, W}, opts);
  for (int a = 0; a < 3; ++a) disp.select(1, a).fill_(double(s[a]));
  const at::Tensor got = ops::warp(image, disp, c.interp, c.pad);
  const at::Tensor image_d = image.to(at::kDouble), got_d = got.to(at::kDouble);
  auto I = image_d.accessor<double, 5>();
  auto O = got_d.accessor<double, 5>();
  for (int64_t d = 0; d < D; ++d)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) {
        int64_t p[3] = {d + s[0], h + s[1], w + s[2]};
        const int64_t size[3] = {D, H, W};
        bool inside = true;
        for (int a = 0; a < 3; ++a) {
          inside = inside && p[a] >= 0 && p[a] < size[a];
          p[a] = std::min(std::max<int64_t>(p[a], 0), size[a] - 1);
        }
        const double want = inside || c.pad == Padding::Border ? I[0][0][p[0]][p[1]][p[2]] : 0.0;
        ASSERT_EQ(O[0][0][d][h][w], want) << "voxel " << d << "," << h << "," << w;
      }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (auto dtype : {at::kFloat, at::kDouble})
    for (auto interp : {Interpolation::Linear, Interpolation::Nearest})
      for (auto pad : {Padding::Zeros, Padding::Border}) cases.push_back({dtype, interp, pad});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllModes, WarpCases, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.dtype == at::kFloat ? "float" : "double") +
                                  "_" + name(info.param.interp) + "_" + name(info.param.pad);
                         });

TEST(Warp, NearestPreservesLabelValues) {
  at::manual_seed(3);
  const std::vector<double> labels = {0, 3, 17, 42, 1000, 2035};
  const at::Tensor index = at::randint(0, int64_t(labels.size()), {1, 1, 9, 10, 11});
  const at::Tensor image = at::tensor(labels, at::kFloat).index({index});
  const at::Tensor disp = smooth_field(1, 9, 10, 11, 3.0);
  for (auto pad : {Padding::Zeros, Padding::Border}) {
    const at::Tensor out = ops::warp(image, disp, Interpolation::Nearest, pad);
    const at::Tensor values = std::get<0>(at::_unique(out));
    auto v = values.accessor<float, 1>();
    for (int64_t i = 0; i < values.size(0); ++i) {
      EXPECT_NE(std::find(labels.begin(), labels.end(), double(v[i])), labels.end())
          << "value " << v[i] << " is not a label (" << name(pad) << ")";
    }
    EXPECT_TRUE(at::equal(out, reference_warp(image, disp, Interpolation::Nearest, pad)));
  }
}

TEST(Warp, PaddingZerosAndBorder) {
  // A constant image sampled half a voxel and five voxels past the last W voxel.
  const at::Tensor image = at::full({1, 1, 3, 3, 4}, 2.0, at::kDouble);
  at::Tensor disp = at::zeros({1, 3, 3, 3, 4}, at::kDouble);
  disp.select(1, 2).fill_(0.5);
  at::Tensor zeros = ops::warp(image, disp, Interpolation::Linear, Padding::Zeros);
  at::Tensor border = ops::warp(image, disp, Interpolation::Linear, Padding::Border);
  // Inside the volume both read 2; at the last voxel zeros blends with 0 → 1.
  EXPECT_DOUBLE_EQ(zeros[0][0][1][1][2].item<double>(), 2.0);
  EXPECT_DOUBLE_EQ(zeros[0][0][1][1][3].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(border[0][0][1][1][3].item<double>(), 2.0);
  disp.select(1, 2).fill_(5.0);
  zeros = ops::warp(image, disp, Interpolation::Linear, Padding::Zeros);
  border = ops::warp(image, disp, Interpolation::Linear, Padding::Border);
  EXPECT_EQ(zeros.abs().max().item<double>(), 0.0);
  EXPECT_TRUE(at::equal(border, image));
  // Nearest: past the edge by 0.6 rounds outside (zeros) or clamps (border).
  disp.select(1, 2).fill_(-0.6);
  zeros = ops::warp(image, disp, Interpolation::Nearest, Padding::Zeros);
  border = ops::warp(image, disp, Interpolation::Nearest, Padding::Border);
  EXPECT_EQ(zeros[0][0][0][0][0].item<double>(), 0.0);
  EXPECT_EQ(zeros[0][0][0][0][1].item<double>(), 2.0);
  EXPECT_EQ(border[0][0][0][0][0].item<double>(), 2.0);
}

TEST(Warp, NonContiguousInputs) {
  at::manual_seed(4);
  // Views with permuted and strided memory: channels-last image, a field sliced
  // out of a larger tensor.
  const at::Tensor image = at::randn({1, 2, 5, 6, 7}).contiguous(at::MemoryFormat::ChannelsLast3d);
  const at::Tensor big = (at::rand({1, 6, 5, 6, 14}) * 2 - 1) * 2;
  const at::Tensor disp = big.slice(1, 0, 6, 2).slice(4, 0, 14, 2);
  ASSERT_FALSE(image.is_contiguous());
  ASSERT_FALSE(disp.is_contiguous());
  for (auto interp : {Interpolation::Linear, Interpolation::Nearest}) {
    const at::Tensor got = ops::warp(image, disp, interp, Padding::Zeros);
    const at::Tensor want = ops::warp(image.contiguous(), disp.contiguous(), interp, Padding::Zeros);
    EXPECT_TRUE(at::equal(got, want));
  }
}

TEST(Warp, EmptyTensors) {
  for (auto shape : {std::vector<int64_t>{0, 3, 4, 5, 6}, std::vector<int64_t>{1, 3, 0, 5, 6}}) {
    at::Tensor image = at::zeros(shape).requires_grad_();
    at::Tensor disp = at::zeros(shape).requires_grad_();
    const at::Tensor out = ops::warp(image, disp);
    EXPECT_EQ(out.sizes(), image.sizes());
    out.sum().backward();
    EXPECT_EQ(image.grad().sizes(), image.sizes());
    EXPECT_EQ(disp.grad().sizes(), disp.sizes());
  }
  // Zero channels: an empty image on a non-empty field.
  const at::Tensor out = ops::warp(at::zeros({1, 0, 4, 5, 6}), at::zeros({1, 3, 4, 5, 6}));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{1, 0, 4, 5, 6}));
}

TEST(Warp, RegisteredWithTheDispatcher) {
  // torch.ops.autoreg.warp(image, u) with the schema's defaults: linear, zeros.
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("autoreg::warp", "");
  const at::Tensor image = at::randn({1, 1, 4, 4, 4});
  const at::Tensor disp = at::rand({1, 3, 4, 4, 4});
  std::vector<c10::IValue> stack = {image, disp, std::string("linear"), std::string("zeros")};
  op.callBoxed(&stack);
  EXPECT_TRUE(at::equal(stack.at(0).toTensor(), ops::warp(image, disp)));
  EXPECT_EQ(op.schema().arguments().at(2).default_value()->toStringRef(), "linear");
  EXPECT_EQ(op.schema().arguments().at(3).default_value()->toStringRef(), "zeros");
}

}  // namespace
}  // namespace autoreg::test
