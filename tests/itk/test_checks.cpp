// The failure checks (pipeline/pair_checks.h) on both sides: each fires on the evidence
// of a failure and stays quiet on that of a success; the second opinion on the held-out
// CBCT's failure, built: a CT stretched onto a short, shifted cone-beam field of view.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "autoreg/io/grid.h"
#include "autoreg/pair/pair_checks.h"
#include "autoreg/registration/field_of_view.h"
#include "similarity_check.h"  // pipeline/pair/src: the checks' measures

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

TEST(PairChecks, ASecondOpinionThatDisagreesIsReported) {
  const PairOptions o;
  PairResult r = improved();
  r.mutual_information = {1.043, 1.071, 15};  // CT → CBCT02 with the defaults: more information
  EXPECT_TRUE(check_pair(o, r, 0.0).empty());
  r.mutual_information.after = 1.040;  // 0.040 of 0.043: within kSecondOpinionDrop
  EXPECT_TRUE(check_pair(o, r, 0.0).empty());
  r.mutual_information.after = 1.032;  // a quarter of it lost
  const auto w = check_pair(o, r, 0.0);
  ASSERT_TRUE(has(w, "second_opinion"));
  EXPECT_EQ(w[0].evidence["before"], 1.043);
  EXPECT_NE(w[0].message.find("15 mm or more inside the fields of view"), std::string::npos) << w[0].message;
  r.mutual_information.after = std::nan("");  // no overlap: worse_than_start's to say
  EXPECT_FALSE(has(check_pair(o, r, 0.0), "second_opinion"));
}

// The held-out CBCT's failure, built: a planning CT (a body of textured organs and a bone,
// wider than the cone-beam cylinder) and its CBCT (the same anatomy, 220 lower, seen in a
// short cylinder off the centre). The affine the held-out pair's pre-alignment kept (18 %
// wider along x, 25 mm across) improved its local NCC there; the mutual information 15 mm
// or more inside the field of view falls by more than the second opinion allows.
TEST(PairChecks, TheSecondOpinionCatchesACtStretchedOntoAShortFieldOfView) {
  const int64_t D = 20, H = 64, W = 64;
  at::manual_seed(11);
  const at::Tensor y = at::arange(H, at::kFloat).view({1, 1, 1, H, 1}) - (H - 1) / 2.0;
  const at::Tensor x = at::arange(W, at::kFloat).view({1, 1, 1, 1, W}) - (W - 1) / 2.0;
  const at::Tensor z = at::arange(D, at::kFloat).view({1, 1, D, 1, 1});
  const at::Tensor body = ((y / 26).pow(2) + (x / 30).pow(2)).le(1).to(at::kFloat).expand({1, 1, D, H, W});
  const at::Tensor texture = at::upsample_trilinear3d(at::rand({1, 1, 5, 10, 10}), {D, H, W}, true);
  at::Tensor ct = body * (-150 + 500 * texture) - 1000 * (1 - body);
  const at::Tensor bone = ((y - 12).pow(2) + x.pow(2)).le(25).to(at::kFloat).expand({1, 1, D, H, W});
  ct = ct * (1 - bone) + 900 * bone;
  const at::Tensor cylinder =
      ((y - 3).pow(2) + (x - 8).pow(2)).le(20 * 20).to(at::kFloat).expand({1, 1, D, H, W}) * z.ge(6).to(at::kFloat);
  const at::Tensor cbct = (ct - 220).clamp_min(-999) * cylinder - 1000 * (1 - cylinder);
  io::Geometry g;
  g.size = {W, H, D};
  g.spacing = {2, 2, 3};
  // As register_pair compares them: both in the CT window, what the CBCT shows 15 mm or more inside its edge.
  const at::Tensor f = io::normalize_window(cbct, pipeline::kCtWindow[0], pipeline::kCtWindow[1]);
  const io::Volume m{io::normalize_window(ct, pipeline::kCtWindow[0], pipeline::kCtWindow[1]), g};
  const registration::FieldOfView fov = registration::field_of_view(cbct);
  ASSERT_TRUE(fov.inside.defined());
  const pipeline::PairMasks interior{registration::away_from_edge(fov.inside, {3, 2, 2}, pipeline::kEdgeMarginMm),
                                     at::Tensor()};
  // x ↦ the moving point: 1/1.18 along x about the cylinder's centre, 25 mm across.
  const double cx = (W - 1) / 2.0 * 2 + 16;
  at::Tensor stretch = at::eye(4, at::kDouble);
  stretch[0][0] = 1 / 1.18;
  stretch[0][3] = cx - cx / 1.18 + 25;
  PairResult r = improved();
  r.mutual_information.margin_mm = pipeline::kEdgeMarginMm;
  r.mutual_information.before = pipeline::detail::mapped_mutual_information(f, g, m, at::Tensor(), at::Tensor(), interior);
  r.mutual_information.after = pipeline::detail::mapped_mutual_information(f, g, m, stretch, at::Tensor(), interior);
  EXPECT_GT(r.mutual_information.before, 1.1) << "the truth shares information";
  EXPECT_TRUE(has(check_pair(PairOptions(), r, 0.0), "second_opinion"))
      << r.mutual_information.before << " -> " << r.mutual_information.after;
}

}  // namespace
}  // namespace autoreg::test
