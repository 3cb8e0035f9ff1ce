// --preset auto (pipeline/preset_choice.h): the preset chosen from synthetic scans of each
// kind (a brain MR, a thick-slice head MR, a trunk MR with thick slices, a CT and a CBCT
// of it), what one patient's scans allow the pre-alignment, and the settings given kept
// over the chosen preset, in memory and through the command line a job's ranks run.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "autoreg/pair/preset_choice.h"
#include "autoreg/pair/registration_settings.h"
#include "autoreg/registration/field_of_view.h"

namespace autoreg::test {
namespace {

using pipeline::RegistrationSettings;

// 1 inside an ellipse of half-axes a × b voxels about the H×W centre on every slice.
at::Tensor ellipse(int64_t d, int64_t h, int64_t w, double a, double b, double dy = 0, double dx = 0) {
  const at::Tensor y = at::arange(h, at::kFloat).view({1, 1, 1, h, 1}) - (h - 1) / 2.0 - dy;
  const at::Tensor x = at::arange(w, at::kFloat).view({1, 1, 1, 1, w}) - (w - 1) / 2.0 - dx;
  return ((y / a).pow(2) + (x / b).pow(2)).le(1).to(at::kFloat).expand({1, 1, d, h, w}).contiguous();
}

io::Volume volume(const at::Tensor& data, std::array<double, 3> spacing) {
  io::Geometry g;
  g.size = {data.size(4), data.size(3), data.size(2)};
  g.spacing = spacing;
  return {data, g};
}

pipeline::PresetChoice choose(const io::Volume& fixed, const io::Volume& moving, const RegistrationSettings& s = {}) {
  const auto evidence = [](const io::Volume& v) {
    const registration::FieldOfView fov = registration::field_of_view(v.data);
    return pipeline::scan_evidence(v, fov.padding, fov.outside_fraction);
  };
  return pipeline::choose_preset(s, pipeline::pair_evidence(evidence(fixed), evidence(moving), fixed.geometry, moving.geometry));
}

// An MR head: tissue of 200-800 in a dark background, well inside the grid.
io::Volume head(int64_t d, std::array<double, 3> spacing, int seed) {
  at::manual_seed(seed);
  const int64_t h = 48, w = 40;
  const at::Tensor inside = ellipse(d, h, w, 18, 14);
  return volume(inside * (200 + 600 * at::rand({1, 1, d, h, w})) + 5 * at::rand({1, 1, d, h, w}), spacing);
}

// A trunk MR: the body cut by the grid's in-plane sides (sagittal slices of a liver).
io::Volume trunk(int seed) {
  at::manual_seed(seed);
  const int64_t d = 12, h = 48, w = 56;
  const at::Tensor body = ellipse(d, h, w, 30, 34);
  return volume((body * (60 + 150 * at::rand({1, 1, d, h, w}))).round(), {1.4, 1.4, 4});
}

// A planning CT (HU: a body at +40 in clamped air) and a CBCT of it: 220 lower, −1000
// outside a cylinder off the centre (a short, shifted field of view).
io::Volume ct() {
  at::manual_seed(5);
  const int64_t d = 12, h = 48, w = 48;
  const at::Tensor body = ellipse(d, h, w, 17, 21);
  const at::Tensor air = (-1000 + 40 * at::rand({1, 1, d, h, w}) - 10).clamp_min(-1000).round();
  return volume(body * (40 + 30 * at::randn({1, 1, d, h, w})).round() + (1 - body) * air, {2, 2, 3});
}

io::Volume cbct_of(const io::Volume& ct) {
  const at::Tensor cylinder = ellipse(ct.data.size(2), ct.data.size(3), ct.data.size(4), 13, 13, 0, 5);
  return {(ct.data - 220).clamp_min(-999) * cylinder - 1000 * (1 - cylinder), ct.geometry};
}

TEST(PresetChoice, EachKindOfScanGetsItsPreset) {
  const pipeline::PresetChoice brains = choose(head(40, {1, 1, 1}, 1), head(40, {1, 1, 1}, 2));
  EXPECT_EQ(brains.name, "brain") << brains.reason;
  EXPECT_TRUE(brains.automatic);
  EXPECT_FALSE(brains.rigid_at_most);
  EXPECT_EQ(brains.evidence.fixed.kind, "mr");
  // Thick slices of a head are still a head: the breathing settings need a trunk.
  EXPECT_EQ(choose(head(10, {1, 1, 5}, 3), head(10, {1, 1, 5}, 4)).name, "brain");
  const pipeline::PresetChoice breathing = choose(trunk(1), trunk(2));
  EXPECT_EQ(breathing.name, "breathing") << breathing.reason;
  EXPECT_GE(breathing.evidence.fixed.sides_covered, 0.3);
  EXPECT_EQ(breathing.evidence.fixed.slice_mm, 4);
  const io::Volume planning = ct();
  const pipeline::PresetChoice cbct = choose(cbct_of(planning), planning);
  EXPECT_EQ(cbct.name, "ct-cbct") << cbct.reason;
  EXPECT_EQ(cbct.evidence.fixed.kind, "cbct");
  EXPECT_EQ(cbct.evidence.moving.kind, "ct");
  ASSERT_TRUE(cbct.evidence.fixed.soft_tissue && cbct.evidence.moving.soft_tissue);
  // The CBCT's offset is measured, not assumed: 220 below the CT's soft tissue.
  EXPECT_NEAR(*cbct.evidence.moving.soft_tissue - *cbct.evidence.fixed.soft_tissue, 220, 15);
  EXPECT_TRUE(cbct.evidence.same_patient);
  EXPECT_NE(cbct.reason.find("cone-beam"), std::string::npos) << cbct.reason;
}

TEST(PresetChoice, OnePatientsScansArePreAlignedRigidlyAtMostWhateverThePreset) {
  const io::Volume planning = ct();
  // The preset forced: brain's 12-parameter affine, limited to rigid for one patient.
  RegistrationSettings brain = pipeline::settings_given({{"preset", "brain"}});
  const pipeline::PresetChoice forced = choose(cbct_of(planning), planning, brain);
  EXPECT_EQ(forced.name, "brain");
  EXPECT_FALSE(forced.automatic);
  EXPECT_TRUE(forced.rigid_at_most);
  EXPECT_TRUE(pipeline::chosen_settings(brain, forced).rigid);
  EXPECT_EQ(pipeline::chosen_settings(brain, forced).regularization, 1);
  // The affine given explicitly is the user's: kept.
  brain = pipeline::settings_given({{"preset", "brain"}, {"affine", "true"}});
  EXPECT_FALSE(choose(cbct_of(planning), planning, brain).rigid_at_most);
  // Brains between subjects keep their affine.
  EXPECT_FALSE(pipeline::chosen_settings({}, choose(head(40, {1, 1, 1}, 1), head(40, {1, 1, 1}, 2))).rigid);
}

TEST(PresetChoice, TheSettingsGivenStayOverTheChosenPreset) {
  const io::Volume planning = ct();
  RegistrationSettings s = pipeline::settings_given({{"regularization", "2"}, {"iterations", "30,10"}});
  EXPECT_EQ(s.preset, "auto");
  const pipeline::PresetChoice c = choose(cbct_of(planning), planning, s);
  const RegistrationSettings run = pipeline::chosen_settings(s, c);
  EXPECT_EQ(run.preset, "ct-cbct");
  EXPECT_TRUE(run.rigid);                // the preset's
  EXPECT_EQ(run.regularization, 2);      // given, over the preset's 4
  EXPECT_EQ(run.iterations, (std::vector<unsigned>{30, 10}));
  // A value given equal to the default is still given: the breathing preset's tv stays diffusion.
  s = pipeline::settings_given({{"regularizer", "diffusion"}});
  const RegistrationSettings liver = pipeline::chosen_settings(s, choose(trunk(1), trunk(2), s));
  EXPECT_EQ(liver.preset, "breathing");
  EXPECT_EQ(liver.regularizer, "diffusion");
  EXPECT_FALSE(liver.affine);
  // Nothing given: exactly the preset's settings.
  const RegistrationSettings plain = pipeline::chosen_settings({}, choose(trunk(1), trunk(2)));
  EXPECT_EQ(pipeline::to_arguments(plain), pipeline::to_arguments(pipeline::preset_settings("breathing")));
}

TEST(PresetChoice, AJobsRanksGetTheSameSettingsBack) {
  // Under auto, only what was given travels: the ranks choose from the images again.
  const RegistrationSettings s =
      pipeline::settings_given({{"regularization", "2"}, {"rigid", "true"}, {"device", "cpu"}, {"seed", "3"}});
  const std::vector<std::string> w = pipeline::to_arguments(s);
  EXPECT_EQ(w, (std::vector<std::string>{"--preset", "auto", "--device", "cpu", "--rigid", "--regularization", "2",
                                         "--seed", "3"}));
  std::map<std::string, std::string> given;
  for (size_t i = 0; i < w.size(); ++i) {
    const pipeline::SettingRow* row = nullptr;
    for (const auto& r : pipeline::setting_rows()) {
      if ("--" + r.option == w[i]) row = &r;
    }
    ASSERT_NE(row, nullptr) << w[i];
    given[row->keyword] = row->switch_sets.empty() ? w[++i] : row->switch_sets;
  }
  const RegistrationSettings back = pipeline::settings_given(given);
  EXPECT_EQ(pipeline::to_arguments(back), w);
  EXPECT_EQ(back.regularization, 2);
  EXPECT_TRUE(back.rigid);
}

}  // namespace
}  // namespace autoreg::test
