// Training: on a tiny synthetic set the loss goes down and the network recovers a known
// deformation better than the identity; a resumed run repeats the uninterrupted one.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <filesystem>
#include <numeric>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/labels.h"
#include "autoreg/registration/similarity.h"
#include "autoreg/registration/train.h"

namespace autoreg::registration {
namespace {

// A smooth phantom: a few Gaussian blobs of different brightness in a dim ball.
at::Tensor phantom(int64_t n) {
  const at::Tensor r = at::linspace(-1, 1, n);
  const at::Tensor z = r.view({n, 1, 1}), y = r.view({1, n, 1}), x = r.view({1, 1, n});
  at::Tensor img = 0.3 * ((z * z + y * y + x * x) < 0.7).to(at::kFloat);
  const double blobs[4][4] = {{0.3, 0.2, -0.2, 0.7}, {-0.3, 0.1, 0.3, 0.5}, {0.0, -0.35, 0.0, 0.9}, {0.2, 0.3, 0.35, 0.6}};
  for (const auto& b : blobs) {
    img = img + b[3] * at::exp(-((z - b[0]).pow(2) + (y - b[1]).pow(2) + (x - b[2]).pow(2)) / 0.03);
  }
  return img.clamp(0, 1).view({1, 1, n, n, n});
}

TrainingSet synthetic_set(int64_t n, int subjects) {
  at::manual_seed(11);
  const at::Tensor atlas = phantom(n);
  TrainingSet set;
  for (int i = 0; i < subjects; ++i) {
    const at::Tensor phi = random_smooth_field({n, n, n}, 1.5, 4);
    const at::Tensor image = ops::warp(atlas, phi, ops::Interpolation::Linear, ops::Padding::Border);
    set.train.push_back(Subject{"s" + std::to_string(i), image, (image * 3).floor().to(at::kInt)});
  }
  return set;
}

// The mean squared difference after the network, over the subjects registered to the
// atlas.
double mean_loss(Model& model, const TrainingSet& set) {
  c10::AutoGradMode no_grad(false);
  double sum = 0;
  for (size_t i = 0; i < set.train.size(); ++i) {
    const at::Tensor& m = set.train[i].image;
    const at::Tensor& f = set.atlas->image;
    const at::Tensor u = model.network->forward(m, f);
    sum += similarity_loss(Similarity::Mse, f, ops::warp(m, u, ops::Interpolation::Linear, ops::Padding::Border))
               .item<double>();
  }
  return sum / double(set.train.size());
}

TEST(Training, LossFallsAndAKnownDeformationIsRecovered) {
  // Atlas mode: the atlas is a smooth random texture deformed by a known smooth field φ
  // (atlas(x) = texture(x + φ(x))), the subject the texture itself, so that registering
  // the subject to the atlas has the answer u = φ.
  constexpr int64_t n = 32;
  at::manual_seed(99);
  const at::Tensor phi = random_smooth_field({n, n, n}, 1.5, 4);
  const at::Tensor moving = at::upsample_trilinear3d(at::rand({1, 1, 8, 8, 8}), {n, n, n}, true);
  const at::Tensor fixed = ops::warp(moving, phi, ops::Interpolation::Linear, ops::Padding::Border);
  TrainingSet set;
  set.train = {Subject{"texture", moving, {}}};
  set.atlas = Subject{"atlas", fixed, {}};
  at::manual_seed(0);
  ModelInfo info;
  info.grid = {n, n, n};
  Model model = make_model(info);
  TrainOptions o;
  o.steps = 200;
  o.learning_rate = 1e-3;
  o.similarity = Similarity::Mse;
  o.augment = false;
  o.smoothness = 0.05;
  const double before = mean_loss(model, set);
  Trainer trainer(model, set, o);
  for (int64_t s = 0; s < o.steps; ++s) trainer.train_step();
  const double after = mean_loss(model, set);
  EXPECT_LT(after, 0.5 * before) << "MSE after registration to the atlas: " << before << " untrained, " << after
                                 << " after " << o.steps << " steps";

  c10::AutoGradMode no_grad(false);
  model.network->eval();
  const at::Tensor u = model.network->forward(moving, fixed);
  // Away from the faces, where the border padding leaves the answer open.
  const auto endpoint_error = [&](const at::Tensor& field) {
    at::Tensor e = (field - phi).pow(2).sum(1, true).sqrt();
    for (int d = 2; d < 5; ++d) e = e.narrow(d, 4, n - 8);
    return e.mean().item<double>();
  };
  const double identity = endpoint_error(at::zeros_like(phi)), learned = endpoint_error(u);
  EXPECT_LT(learned, 0.7 * identity) << "mean endpoint error: identity " << identity << " voxels, network "
                                     << learned;
}

TEST(Training, ResumeRepeatsTheUninterruptedRun) {
  constexpr int64_t n = 16;
  const auto fresh = [] {
    at::manual_seed(1);
    ModelInfo info;
    info.grid = {n, n, n};
    return make_model(info);
  };
  TrainOptions o;
  o.learning_rate = 1e-3;
  o.deformation_voxels = 1.0;
  TrainingSet data = synthetic_set(n, 3);
  data.atlas = Subject{"atlas", phantom(n), (phantom(n) * 3).floor().to(at::kInt)};
  data.intensity_table = label_intensity_table({data.atlas->image}, {data.atlas->labels});
  o.synthetic_fraction = 0.5;

  Model straight = fresh();
  Trainer a(straight, data, o);
  for (int s = 0; s < 4; ++s) a.train_step();

  const std::string ckpt = (std::filesystem::temp_directory_path() /
                            ("autoreg-resume-" + std::to_string(::getpid()) + ".ckpt")).string();
  Model first = fresh();
  {
    Trainer b(first, data, o);
    for (int s = 0; s < 2; ++s) b.train_step();
    b.save_checkpoint(ckpt);
  }
  Model resumed = fresh();
  Trainer c(resumed, data, o);
  c.resume(ckpt);
  EXPECT_EQ(c.steps_done(), 2);
  for (int s = 0; s < 2; ++s) c.train_step();
  std::filesystem::remove(ckpt);
  const auto pa = straight.network->named_parameters(), pc = resumed.network->named_parameters();
  for (const auto& item : pa) {
    EXPECT_TRUE(at::equal(item.value(), pc[item.key()])) << item.key();
  }
  // Another run's options are refused.
  TrainOptions other = o;
  other.learning_rate = 5e-4;
  Model m = fresh();
  Trainer d(m, data, other);
  {
    Trainer b(first, data, o);
    b.save_checkpoint(ckpt);
  }
  const auto refusal = [&ckpt](Trainer& t) -> std::string {
    try {
      t.resume(ckpt);
    } catch (const ModelFileError& e) {
      return e.what();
    }
    return "resumed";
  };
  // Named by option, with both values.
  EXPECT_NE(refusal(d).find("lr was 0.001, is 0.0005 now"), std::string::npos) << refusal(d);
  // And by network: another genotype on the same grid.
  at::manual_seed(1);
  ModelInfo wider = first.info;
  wider.network.genotype.edges[0] = "conv_5x5";
  Model w = make_model(wider);
  Trainer e(w, data, o);
  EXPECT_NE(refusal(e).find("genotype was conv_3x3"), std::string::npos) << refusal(e);
  std::filesystem::remove(ckpt);
}

// A learning rate far too high makes the gradient spike or the loss non-finite: with the
// guard each such step goes back to the last good state at half the rate, and training
// completes with finite weights.
TEST(Training, AGradientSpikeIsRolledBackAndTrainingCompletes) {
  constexpr int64_t n = 16;
  TrainingSet data = synthetic_set(n, 3);
  data.atlas = Subject{"atlas", phantom(n), (phantom(n) * 3).floor().to(at::kInt)};
  ModelInfo info;
  info.grid = {n, n, n};
  TrainOptions o;
  o.learning_rate = 1e-3;
  o.max_rollbacks = 30;
  at::manual_seed(1);
  Model model = make_model(info);
  Trainer t(model, data, o);
  // Learn a little at a sane rate (the running average), then at 300× it.
  for (int s = 0; s < 12; ++s) EXPECT_EQ(t.train_step().rollbacks, 0);
  // The guard's rate follows the options': a second trainer on these weights at lr 0.3.
  o.learning_rate = 0.3;
  Trainer fast(model, data, o);
  StepReport r;
  for (int s = 0; s < 40; ++s) r = fast.train_step();
  EXPECT_GT(r.rollbacks, 0);
  EXPECT_TRUE(std::isfinite(r.loss));
  for (const auto& p : model.network->parameters()) EXPECT_TRUE(at::isfinite(p).all().item<bool>());
}

TEST(Training, SyntheticPairsLearnFromTheirLabelsAlone) {
  constexpr int64_t n = 16;
  TrainingSet data = synthetic_set(n, 2);
  data.atlas = Subject{"atlas", phantom(n), (phantom(n) * 3).floor().to(at::kInt)};
  data.intensity_table = label_intensity_table({data.atlas->image}, {data.atlas->labels});
  ModelInfo info;
  info.grid = {n, n, n};
  at::manual_seed(1);
  Model model = make_model(info);
  TrainOptions o;
  o.synthetic_fraction = 1.0;  // every moving image synthesised
  Trainer synthetic(model, data, o);
  const StepReport r = synthetic.train_step();
  EXPECT_GT(r.similarity, 0.0);
  EXPECT_NEAR(r.loss, o.smoothness * r.smoothness + o.dice_weight * r.dice, 1e-6);
  o.synthetic_fraction = 0.0;  // real images: similarity counts
  Trainer real(model, data, o);
  const StepReport q = real.train_step();
  EXPECT_NEAR(q.loss, q.similarity + o.smoothness * q.smoothness + o.dice_weight * q.dice, 1e-6);
}

TEST(Training, RefusesDataItCannotUse) {
  ModelInfo info;
  info.grid = {16, 16, 16};
  Model model = make_model(info);
  TrainingSet one = synthetic_set(16, 1);
  TrainOptions plain;
  plain.augment = false;
  EXPECT_THROW(Trainer(model, one, plain), std::invalid_argument);  // pairwise needs 2 (or 1, augmented)
  EXPECT_NO_THROW(Trainer(model, one, TrainOptions{}));
  TrainingSet wrong = synthetic_set(24, 2);
  EXPECT_THROW(Trainer(model, wrong, TrainOptions{}), std::invalid_argument);  // not the model grid
  TrainingSet no_image = synthetic_set(16, 2);
  no_image.train[0].image = at::Tensor();
  EXPECT_THROW(Trainer(model, no_image, TrainOptions{}), std::invalid_argument);  // nothing to synthesise from
}

TEST(Augment, SyntheticImagesFollowTheLabelIntensities) {
  at::manual_seed(2);
  const at::Tensor labels = at::randint(0, 3, {1, 1, 12, 12, 12}, at::kInt);
  const at::Tensor image = labels.to(at::kFloat) * 0.4;  // label 1 → 0.4, 2 → 0.8
  const at::Tensor table = label_intensity_table({image}, {labels});
  EXPECT_NEAR(table[1].item<double>(), 0.4, 1e-6);
  EXPECT_NEAR(table[2].item<double>(), 0.8, 1e-6);
  // Big uniform regions keep their order of brightness; unseen labels stay dark.
  at::Tensor blocks = at::zeros({1, 1, 12, 12, 12}, at::kInt);
  blocks.narrow(4, 4, 4).fill_(1);
  blocks.narrow(4, 8, 4).fill_(2);
  blocks.narrow(2, 0, 3).fill_(50);
  const at::Tensor synth = synthesize_image(blocks, table);
  const auto mean_of = [&](int v) { return synth.masked_select(blocks == v).mean().item<double>(); };
  EXPECT_LT(mean_of(0), mean_of(1));
  EXPECT_LT(mean_of(1), mean_of(2));
  EXPECT_LT(mean_of(50), 0.2);
  EXPECT_EQ(shared_labels(blocks, labels), (std::vector<int64_t>{1, 2}));
}

}  // namespace
}  // namespace autoreg::registration
