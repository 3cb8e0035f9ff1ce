// Feature-wise transformations (feature_transform.h): identity at the start (the output
// equal to the network's without them), wired after every operation, saved and loaded;
// FTM adaptation changes γ and β alone and lowers the objective of a shifted domain on
// pairs it did not see; feature noise perturbs training steps only.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/similarity.h"
#include "autoreg/registration/train.h"

namespace autoreg::registration {
namespace {

namespace fs = std::filesystem;

Model model_of(const std::string& kind, int64_t n, uint64_t seed = 3) {
  ModelInfo info;
  info.network.kind = kind;
  info.grid = {n, n, n};
  at::manual_seed(seed);
  Model m = make_model(info);
  // Flow heads as if trained (an untrained head is ~1e-5: every output would be ~0).
  c10::AutoGradMode no_grad(false);
  for (auto& p : m.network->named_parameters()) {
    if (p.key().find("flow") != std::string::npos && p.key().find("weight") != std::string::npos) {
      p.value().normal_(0, 0.05);
    }
  }
  return m;
}

std::array<at::Tensor, 2> pair_of(int64_t n) {
  at::manual_seed(5);
  const at::Tensor a = at::rand({1, 1, n / 4, n / 4, n / 4});
  const at::Tensor m = at::upsample_trilinear3d(a, {n, n, n}, false);
  const at::Tensor f = at::roll(m, {1, -1}, {2, 4});
  return {m, f};
}

class WithTransforms : public ::testing::TestWithParam<std::string> {};

TEST_P(WithTransforms, IdentityTransformsLeaveTheOutputAsItWasBitForBit) {
  const int64_t n = 16;
  Model m = model_of(GetParam(), n);
  const auto [moving, fixed] = pair_of(n);
  c10::AutoGradMode no_grad(false);
  m.network->eval();
  const at::Tensor before = m.network->forward(moving, fixed);
  ASSERT_GT(before.abs().max().item<double>(), 1e-3) << "a network that moves something";
  const auto ops = m.network->operations();
  EXPECT_EQ(ops.size(), GetParam() == "autoreg" ? 12u : 11u);
  EXPECT_FALSE(m.network->has_feature_transforms());
  const size_t weights = m.network->parameters().size();
  add_feature_transforms(m);
  EXPECT_TRUE(m.info.network.feature_transforms);
  EXPECT_EQ(m.network->parameters().size(), weights + 2 * ops.size());
  int64_t channels = 0;
  for (const auto& op : ops) channels += op.second;
  int64_t count = 0;
  for (const at::Tensor& t : m.network->feature_transform_parameters()) count += t.numel();
  EXPECT_EQ(count, 2 * channels);
  EXPECT_EQ(count, GetParam() == "autoreg" ? 672 : 608);
  EXPECT_TRUE(at::equal(m.network->forward(moving, fixed), before));
  // In training mode without noise too.
  m.network->train();
  EXPECT_TRUE(at::equal(m.network->forward(moving, fixed), before));
}

// Every transformation is in the computation: each γ and β gets a gradient, and setting
// one changes the output.
TEST_P(WithTransforms, EveryTransformationActsOnTheOutput) {
  const int64_t n = 16;
  Model m = model_of(GetParam(), n);
  add_feature_transforms(m);
  const auto [moving, fixed] = pair_of(n);
  const at::Tensor u = m.network->forward(moving, fixed);
  u.pow(2).sum().backward();
  const auto params = m.network->named_parameters();
  for (const auto& p : params) {
    if (p.key().rfind("ftm.", 0) != 0) continue;
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key();
  }
  c10::AutoGradMode no_grad(false);
  for (const auto& op : m.network->operations()) {
    const at::Tensor gamma = params["ftm." + op.first + ".gamma"];
    gamma.fill_(1.5);
    EXPECT_FALSE(at::equal(m.network->forward(moving, fixed), u)) << op.first;
    gamma.fill_(1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(FeatureTransforms, WithTransforms, ::testing::Values("autoreg", "unet"));

TEST(FeatureTransforms, NoiseOnlyInTraining) {
  const int64_t n = 16;
  Model m = model_of("autoreg", n);
  add_feature_transforms(m);
  m.network->set_feature_noise(0.2);
  const auto [moving, fixed] = pair_of(n);
  c10::AutoGradMode no_grad(false);
  m.network->eval();
  const at::Tensor clean = m.network->forward(moving, fixed);
  m.network->train();
  EXPECT_FALSE(at::equal(m.network->forward(moving, fixed), clean));
  m.network->eval();
  EXPECT_TRUE(at::equal(m.network->forward(moving, fixed), clean));
}

// One scanner shift for the whole batch (a pair's moving and fixed scans are one batch
// of the feature cell), sized by each channel's spread: two equal samples stay equal, and
// a channel scaled by 1000 has its shift scaled alike.
TEST(FeatureTransforms, NoiseIsOneDrawPerBatchInUnitsOfTheChannelsSpread) {
  FeatureTransform t(2);
  t->noise = 0.5;
  t->train();
  c10::AutoGradMode no_grad(false);
  at::manual_seed(1);
  const at::Tensor one = at::rand({1, 2, 4, 4, 4}, at::kDouble);
  const at::Tensor y = t->forward(at::cat({one, one}, 0));
  EXPECT_TRUE(at::equal(y[0], y[1]));
  EXPECT_FALSE(at::allclose(y, at::cat({one, one}, 0)));
  at::Tensor scaled = one.clone();
  scaled.select(1, 1).mul_(1000);
  at::manual_seed(2);
  const at::Tensor a = t->forward(one);
  at::manual_seed(2);
  const at::Tensor b = t->forward(scaled);
  EXPECT_TRUE(at::allclose(a.select(1, 0), b.select(1, 0)));
  EXPECT_TRUE(at::allclose(a.select(1, 1) * 1000, b.select(1, 1)));
}

TEST(FeatureTransforms, ModelFileRoundTripAndFormat) {
  const fs::path dir = fs::temp_directory_path() / ("autoreg-ftm-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string plain = (dir / "plain.autoreg").string(), with = (dir / "with.autoreg").string();
  Model m = model_of("autoreg", 16);
  save_model(plain, m);
  add_feature_transforms(m);
  {
    c10::AutoGradMode no_grad(false);
    for (const at::Tensor& t : m.network->feature_transform_parameters()) t.uniform_(0.5, 1.5);
  }
  save_model(with, m);
  const auto head = [](const std::string& p) {
    std::ifstream in(p);
    std::string a, b;
    std::getline(in, a);
    std::getline(in, b);
    return a + "\n" + b;
  };
  EXPECT_EQ(head(plain), "AUTOREG MODEL\nformat 2");  // no transformations: as before
  EXPECT_EQ(head(with), "AUTOREG MODEL\nformat 3");
  const Model old = load_model(plain);
  EXPECT_FALSE(old.network->has_feature_transforms());
  EXPECT_FALSE(old.info.network.feature_transforms);
  const Model back = load_model(with);
  EXPECT_TRUE(back.network->has_feature_transforms());
  const auto a = m.network->named_parameters(), b = back.network->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a) EXPECT_TRUE(at::equal(p.value(), b[p.key()])) << p.key();
  EXPECT_EQ(weights_checksum(*back.network), weights_checksum(*old.network));
  fs::remove_all(dir);
}

// A source domain (phantoms) and a shifted target domain (the same anatomy, intensities
// remapped non-monotonically, as another contrast): a model trained on the source, then
// FTM on three target subjects; the objective of held-back target pairs falls, and the
// weights do not change.
TEST(FeatureTransforms, FtmChangesGammaAndBetaAloneAndLowersTheTargetObjective) {
  constexpr int64_t n = 16;
  at::set_num_threads(2);  // oneDNN's results depend on the threads: pinned, as CI runs it
  at::manual_seed(11);
  const at::Tensor r = at::linspace(-1, 1, n);
  const at::Tensor z = r.view({n, 1, 1}), y = r.view({1, n, 1}), x = r.view({1, 1, n});
  at::Tensor base = 0.3 * ((z * z + y * y + x * x) < 0.7).to(at::kFloat);
  const double blobs[3][4] = {{0.3, 0.2, -0.2, 0.7}, {-0.3, 0.1, 0.3, 0.5}, {0.0, -0.35, 0.0, 0.9}};
  for (const auto& b : blobs) {
    base = base + b[3] * at::exp(-((z - b[0]).pow(2) + (y - b[1]).pow(2) + (x - b[2]).pow(2)) / 0.03);
  }
  base = base.clamp(0, 1).view({1, 1, n, n, n});
  const auto subject = [&](int i) {
    const at::Tensor phi = random_smooth_field({n, n, n}, 1.5, 4);
    return ops::warp(base, phi, ops::Interpolation::Linear, ops::Padding::Border);
  };
  // Bright becomes dark and the mid-grey bright: x ↦ 4x(1 − x).
  const auto shifted = [](const at::Tensor& t) { return 4 * t * (1 - t); };
  TrainingSet source, target, held;
  for (int i = 0; i < 4; ++i) source.train.push_back({"s" + std::to_string(i), subject(i), {}});
  for (int i = 0; i < 3; ++i) target.train.push_back({"t" + std::to_string(i), shifted(subject(i)), {}});
  for (int i = 0; i < 3; ++i) held.train.push_back({"h" + std::to_string(i), shifted(subject(i)), {}});

  ModelInfo info;
  info.grid = {n, n, n};
  at::manual_seed(1);
  Model model = make_model(info);
  TrainOptions o;
  o.learning_rate = 3e-3;
  o.steps = 60;
  o.dice_weight = 0;
  o.deformation_voxels = 1.0;
  {
    Trainer t(model, source, o);
    for (int s = 0; s < 60; ++s) t.train_step();
  }
  // The objective (NCC + λ smoothness) of the held-back target pairs, both orders.
  const auto objective = [&](Model& m) {
    c10::AutoGradMode no_grad(false);
    m.network->eval();
    double sum = 0;
    for (size_t i = 0; i < held.train.size(); ++i) {
      for (size_t j = 0; j < held.train.size(); ++j) {
        if (i == j) continue;
        const at::Tensor& mv = held.train[i].image;
        const at::Tensor& fx = held.train[j].image;
        const at::Tensor u = m.network->forward(mv, fx);
        const at::Tensor w = ops::warp(mv, u, ops::Interpolation::Linear, ops::Padding::Border);
        sum += similarity_loss(Similarity::Ncc, fx, w, 9).item<double>();
      }
    }
    return sum;
  };
  const double before = objective(model);
  const std::string checksum = weights_checksum(*model.network);
  add_feature_transforms(model);
  EXPECT_EQ(objective(model), before);
  TrainOptions a = o;
  a.trainable = Trainable::FeatureTransforms;
  a.learning_rate = 1e-2;
  {
    Trainer t(model, target, a);
    for (int s = 0; s < 40; ++s) t.train_step();
  }
  EXPECT_EQ(weights_checksum(*model.network), checksum);
  const auto ftm = model.network->feature_transform_parameters();
  double moved = 0;
  for (size_t k = 0; k < ftm.size(); k += 2) {
    moved += (ftm[k] - 1).abs().sum().item<double>() + ftm[k + 1].abs().sum().item<double>();
  }
  EXPECT_GT(moved, 0) << "γ and β changed";
  const double after = objective(model);
  EXPECT_LT(after, before) << "the objective on held-back pairs of the new domain";
  std::printf("held-back target pairs' NCC loss: %.5f before, %.5f after FTM\n", before, after);
}

TEST(FeatureTransforms, AdaptationResumesExactlyAndRefusesAnotherMethodsCheckpoint) {
  constexpr int64_t n = 16;
  const auto fresh = [] {
    Model m = model_of("autoreg", n, 1);
    add_feature_transforms(m);
    return m;
  };
  at::manual_seed(2);
  TrainingSet data;
  data.train = {{"a", pair_of(n)[0], {}}};  // one subject: pairs with deformed copies of itself
  TrainOptions o;
  o.trainable = Trainable::FeatureTransforms;
  o.learning_rate = 1e-2;
  o.dice_weight = 0;
  o.run_fields = {{"method", "ftm"}};
  Model straight = fresh();
  {
    Trainer t(straight, data, o);
    for (int s = 0; s < 4; ++s) t.train_step();
  }
  const std::string ckpt = (fs::temp_directory_path() / ("autoreg-ftm-resume-" + std::to_string(::getpid()) + ".ckpt")).string();
  {
    Model first = fresh();
    Trainer t(first, data, o);
    for (int s = 0; s < 2; ++s) t.train_step();
    t.save_checkpoint(ckpt);
    t.finish_checkpoints();
  }
  Model resumed = fresh();
  {
    Trainer t(resumed, data, o);
    t.resume(ckpt);
    for (int s = 0; s < 2; ++s) t.train_step();
  }
  const auto pa = straight.network->named_parameters(), pc = resumed.network->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(at::equal(item.value(), pc[item.key()])) << item.key();
  TrainOptions finetune = o;
  finetune.trainable = Trainable::All;
  finetune.run_fields = {{"method", "finetune"}};
  Model other = fresh();
  Trainer t(other, data, finetune);
  try {
    t.resume(ckpt);
    ADD_FAILURE() << "another method's checkpoint was resumed";
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find("method was ftm, is finetune now"), std::string::npos) << e.what();
  }
  fs::remove(ckpt);
  // Without augmentation one subject makes no pair; a model without transformations
  // cannot be adapted by them.
  TrainOptions plain = o;
  plain.augment = false;
  Model m1 = fresh();
  EXPECT_THROW(Trainer(m1, data, plain), std::invalid_argument);
  Model bare = model_of("autoreg", n);
  EXPECT_THROW(Trainer(bare, data, o), std::invalid_argument);
}

}  // namespace
}  // namespace autoreg::registration
