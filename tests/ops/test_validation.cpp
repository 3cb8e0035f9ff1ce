// Bad arguments fail with a message that names the operator and the argument.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>
#include <string>

#include "helpers.h"

namespace autoreg::test {
namespace {

void expect_error(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    for (const auto& s : fragments) {
      EXPECT_NE(what.find(s), std::string::npos) << "'" << s << "' not in: " << what;
    }
  }
}

const at::Tensor kImage = at::zeros({1, 1, 4, 5, 6});
const at::Tensor kField = at::zeros({1, 3, 4, 5, 6});

TEST(Validation, Rank) {
  expect_error([] { ops::warp(at::zeros({1, 4, 5, 6}), kField); }, {"autoreg::warp", "image", "5-D"});
  expect_error([] { ops::warp(kImage, at::zeros({3, 4, 5, 6})); }, {"displacement", "5-D"});
}

TEST(Validation, ChannelCount) {
  expect_error([] { ops::warp(kImage, at::zeros({1, 2, 4, 5, 6})); }, {"displacement", "3 channels"});
  expect_error([] { ops::compose(at::zeros({1, 2, 4, 5, 6}), kField); }, {"autoreg::compose", "u", "3 channels"});
  expect_error([] { ops::integrate(at::zeros({1, 1, 4, 5, 6})); }, {"autoreg::integrate", "velocity"});
  expect_error([] { ops::jacobian_determinant(kImage); }, {"jacobian_determinant", "displacement"});
}

TEST(Validation, SpatialSizeAndBatch) {
  expect_error([] { ops::warp(at::zeros({1, 1, 4, 5, 7}), kField); }, {"spatial size", "image", "displacement"});
  expect_error([] { ops::warp(at::zeros({2, 1, 4, 5, 6}), kField); }, {"batch size"});
  expect_error([] { ops::compose(kField, at::zeros({1, 3, 4, 4, 6})); }, {"spatial size", "v"});
}

TEST(Validation, Dtype) {
  expect_error([] { ops::warp(kImage.to(at::kInt), kField); }, {"image", "float32 or float64"});
  expect_error([] { ops::warp(kImage.to(at::kHalf), kField); }, {"image", "float32 or float64"});
  expect_error([] { ops::warp(kImage.to(at::kDouble), kField); }, {"image", "displacement", "Double", "Float"});
}

TEST(Validation, OptionsAndSteps) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("autoreg::warp", "");
  expect_error(
      [&] {
        std::vector<c10::IValue> s = {kImage, kField, std::string("cubic"), std::string("zeros")};
        op.callBoxed(&s);
      },
      {"interpolation", "cubic"});
  expect_error(
      [&] {
        std::vector<c10::IValue> s = {kImage, kField, std::string("linear"), std::string("mirror")};
        op.callBoxed(&s);
      },
      {"padding", "mirror"});
  expect_error([] { ops::integrate(kField, -1); }, {"steps", "-1"});
  expect_error([] { ops::integrate(kField, 31); }, {"steps", "31"});
}

TEST(Validation, UndefinedTensor) {
  expect_error([] { ops::warp(at::Tensor(), kField); }, {"image"});
}

}  // namespace
}  // namespace autoreg::test
