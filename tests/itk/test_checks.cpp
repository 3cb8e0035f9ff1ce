// The failure checks (pipeline/pair_checks.h) on both sides: each fires on the evidence
// of a failure and stays quiet on that of a success.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "autoreg/pipeline/pair_checks.h"

namespace autoreg::test {
namespace {

using pipeline::check_pair;
using pipeline::PairOptions;
using pipeline::PairResult;

// An affine turning by `degrees` about the third axis and scaling by `scale`.
at::Tensor turned(double degrees, double scale = 1) {
  const double a = degrees * M_PI / 180;
  at::Tensor m = at::eye(4, at::kDouble);
  m[0][0] = scale * std::cos(a);
  m[0][1] = -scale * std::sin(a);
  m[1][0] = scale * std::sin(a);
  m[1][1] = scale * std::cos(a);
  m[2][2] = scale;
  return m;
}

// A result that improved on its start, with no pre-alignment to speak of.
PairResult improved() {
  PairResult r;
  r.affine = at::eye(4, at::kDouble);
  r.loss_before = 1;
  r.loss_after = 0.5;
  return r;
}

bool has(const std::vector<pipeline::PairWarning>& w, const std::string& check) {
  for (const auto& x : w) {
    if (x.check == check) return true;
  }
  return false;
}

TEST(PairChecks, AResultWorseThanItsStartIsReportedAndABetterOneIsNot) {
  PairOptions o;
  PairResult r;
  r.affine = at::eye(4, at::kDouble);
  r.loss_before = 0.88;
  r.loss_after = 0.67;
  EXPECT_TRUE(check_pair(o, r, 0.0).empty());
  r.loss_after = 0.90;  // within the tolerance: noise about an aligned start
  EXPECT_TRUE(check_pair(o, r, 0.0).empty());
  r.loss_after = 0.95;
  const auto w = check_pair(o, r, 0.0);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].check, "worse_than_start");
  EXPECT_EQ(w[0].evidence["loss_before"], 0.88);
  EXPECT_EQ(w[0].evidence["loss_after"], 0.95);
  EXPECT_NE(pipeline::warnings_line(w).find("WARNING: the images match worse"), std::string::npos);
  r.loss_after = std::nan("");  // nothing overlaps any more
  EXPECT_TRUE(has(check_pair(o, r, 0.0), "worse_than_start"));
}

TEST(PairChecks, AnAffineBeyondThePresetsLimitsIsReported) {
  PairOptions o;
  PairResult r = improved();
  r.affine = turned(20, 1.1);  // between subjects: fine
  EXPECT_TRUE(check_pair(o, r, 0.0).empty());
  r.affine = turned(30, 1.8);  // scaled far beyond a head's size
  EXPECT_TRUE(has(check_pair(o, r, 0.0), "affine_limits"));
  o.affine.rigid = true;  // the same patient: 30° is a failure, 5° is not
  r.affine = turned(30);
  const auto w = check_pair(o, r, 0.0);
  ASSERT_TRUE(has(w, "affine_limits"));
  EXPECT_NEAR(w[0].evidence["rotation_degrees"].get<double>(), 30, 1e-6);
  r.affine = turned(5);
  EXPECT_TRUE(check_pair(o, r, 0.0).empty());
  o.stages = pipeline::Stages::DeformableOnly;  // no pre-alignment: nothing to judge
  r.affine = turned(30);
  EXPECT_TRUE(check_pair(o, r, 0.0).empty());
  const pipeline::AffineShape mirror = pipeline::affine_shape(at::diag(at::tensor({-1.0, 1.0, 1.0, 1.0}, at::kDouble)));
  EXPECT_TRUE(mirror.reflects);
}

TEST(PairChecks, AFieldThatFoldsIsReported) {
  const PairOptions o;
  const PairResult r = improved();
  EXPECT_TRUE(check_pair(o, r, 0.5).empty());
  EXPECT_TRUE(has(check_pair(o, r, 2.5), "folding"));
}

}  // namespace
}  // namespace autoreg::test
