#include "autoreg/registration/train.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "autoreg/device.h"
#include "autoreg/ops.h"
#include "autoreg/registration/labels.h"
#include "autoreg/registration/metrics.h"
#include "autoreg/registration/run_state.h"
#include "autoreg/registration/regularization.h"
#include "autoreg/registration/similarity.h"
#include "autoreg/registration/training_pairs.h"

namespace autoreg::registration {
namespace {

constexpr int64_t kNccWindow = 9;  // `similarity` mse's counterpart of the ncc9 term

}  // namespace

const char* to_string(Trainable t) {
  switch (t) {
    case Trainable::Weights:
      return "weights";
    case Trainable::FeatureTransforms:
      return "feature_transforms";
    case Trainable::All:
      break;
  }
  return "all";
}

Trainer::Trainer(Model& model, TrainingSet data, TrainOptions options)
    : model_(model),
      data_(std::move(data)),
      options_(std::move(options)),
      device_(ops::parse_device(options_.device)),
      run_({options_.spike_factor, options_.max_rollbacks, TrainOptions::kSnapshotEvery, options_.async_checkpoints,
            options_.spike_factor > 0, "training", "try a lower --learning-rate", "CHECKPOINT"},
           {[this] { return state(); }, [this](const Archive& a, const std::string& path) { load_state(a, path); },
            [this] { set_learning_rate(); }, [this] { return step_; }}) {
  const bool atlas = data_.atlas.has_value();
  if (options_.batch < 1) throw std::invalid_argument("the batch needs at least one pair");
  if (data_.train.empty() || (!atlas && data_.train.size() < 2 && !options_.augment)) {
    throw std::invalid_argument(atlas ? "training needs at least one subject besides the atlas"
                                      : "pairwise training needs at least two subjects (or one, with augmentation)");
  }
  const bool transforms = model_.network->has_feature_transforms();
  if ((options_.trainable == Trainable::FeatureTransforms || options_.feature_noise > 0) && !transforms) {
    throw std::invalid_argument("the model's network has no feature transformations to train or perturb");
  }
  if (options_.feature_noise < 0) throw std::invalid_argument("feature noise must be >= 0");
  if (atlas && !data_.atlas->image.defined()) throw std::invalid_argument("the atlas needs an image");
  const auto& shape = model_.info.grid;
  for (const auto* set : {&data_.train, &data_.validation}) {
    for (const Subject& s : *set) {
      if (!s.image.defined() && !(s.labels.defined() && data_.intensity_table.defined())) {
        throw std::invalid_argument(s.name + ": no image, and no label map to synthesise one from");
      }
      for (const at::Tensor& t : {s.image, s.labels}) {
        if (t.defined() && (t.dim() != 5 || t.size(2) != shape[0] || t.size(3) != shape[1] || t.size(4) != shape[2])) {
          std::ostringstream m;
          m << s.name << ": " << t.sizes() << " is not on the model grid";
          throw std::invalid_argument(m.str());
        }
      }
    }
  }
  model_.network->to(device_);
  if (transforms) model_.network->set_feature_noise(options_.feature_noise);
  // This trainer's choice alone decides what learns (an earlier trainer of the same
  // network may have frozen some of it).
  for (at::Tensor& t : model_.network->parameters()) t.set_requires_grad(true);
  if (options_.trainable == Trainable::FeatureTransforms) {
    trained_ = model_.network->feature_transform_parameters();
    // Frozen: no gradient is computed for them (a frozen network backpropagates only
    // what γ and β need).
    for (at::Tensor& w : model_.network->weight_parameters()) w.set_requires_grad(false);
  } else if (options_.trainable == Trainable::Weights) {
    trained_ = model_.network->weight_parameters();
    for (at::Tensor& t : model_.network->feature_transform_parameters()) t.set_requires_grad(false);
  } else {
    trained_ = model_.network->parameters();
  }
  adam_ = std::make_unique<torch::optim::Adam>(trained_, torch::optim::AdamOptions(options_.learning_rate));
  run_.start();
}

Trainer::~Trainer() = default;

StepReport Trainer::train_step() {
  StepReport r;
  run_.step([&] {
    r = try_step();
    return GuardedRun::Outcome{step_, r.gradient_norm, ""};
  });
  r.rollbacks = run_.guard().rollbacks();
  return r;
}

void Trainer::set_learning_rate() {
  for (auto& group : adam_->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(options_.learning_rate * run_.guard().lr_scale());
  }
}

struct Trainer::PairTerms {
  double loss = 0, similarity = 0, smoothness = 0, dice = 0;
};

// Pair g of this step: drawn, registered, and its loss / batch back-propagated (the
// gradients of the step's pairs add up to the gradient of their mean).
Trainer::PairTerms Trainer::pair_gradient(int64_t g) {
  const at::Device& device = device_;
  // This pair's randomness depends on (seed, step, g) alone: resuming repeats it exactly,
  // with any number of ranks. Pair 0 draws as a step did before batches.
  std::mt19937_64 rng = step_generator(options_.seed, step_, g);
  DrawOptions draw;
  draw.augment = options_.augment;
  draw.deformation_voxels = options_.deformation_voxels;
  draw.synthetic_fraction = options_.synthetic_fraction;
  const TrainingPair p = draw_pair(data_, data_.train, draw, rng);
  const at::Tensor m = p.moving.to(device), f = p.fixed.to(device);

  const at::Tensor u = model_.network->forward(m, f);
  const at::Tensor warped = ops::warp(m, u, ops::Interpolation::Linear, ops::Padding::Border);
  at::Tensor sim, smooth, weighted;
  if (!options_.objective && options_.similarity == Similarity::Mse) {
    sim = similarity_loss(Similarity::Mse, f, warped, kNccWindow);
    smooth = gradient_l2(u);
    weighted = sim;
  } else {
    const ObjectiveWeights w = options_.objective ? *options_.objective
                                                  : ObjectiveWeights::for_similarity(options_.similarity, options_.smoothness);
    const at::Tensor terms = objective_terms(f, warped, u, needed_terms(w));
    const at::Tensor lambda = at::tensor(std::vector<double>(w.lambda.begin(), w.lambda.end()), terms.options());
    weighted = (terms.narrow(0, 0, kSmoothness) * lambda.narrow(0, 0, kSmoothness)).sum();
    sim = weighted;
    smooth = terms[kSmoothness];
  }
  const double smoothness_weight = options_.objective ? options_.objective->lambda[kSmoothness] : options_.smoothness;
  const std::vector<int64_t> labels = options_.dice_weight > 0 && p.moving_labels.defined() && p.fixed_labels.defined()
                                          ? shared_labels(p.moving_labels, p.fixed_labels)
                                          : std::vector<int64_t>{};
  // The similarity of a synthetic image to another image measures the synthesiser, not
  // the alignment: a pair with a synthetic image learns from its label maps alone (as
  // SynthMorph does) when it has them.
  at::Tensor loss = (p.synthetic && !labels.empty() ? 0.0 : 1.0) * weighted + smoothness_weight * smooth;
  PairTerms t;
  if (!labels.empty()) {
    const at::Tensor d = label_dice_loss(p.moving_labels, p.fixed_labels, u, labels);
    loss = loss + options_.dice_weight * d;
    t.dice = d.item<double>();
  }
  t.loss = loss.item<double>();
  (loss / double(options_.batch)).backward();
  t.similarity = sim.item<double>();
  t.smoothness = smooth.item<double>();
  return t;
}

StepReport Trainer::try_step() {
  Collective* const collective = run_.collective();
  const int world = run_.world();
  model_.network->train();
  adam_->zero_grad();
  PairTerms sum;
  for (int64_t g = rank(); g < options_.batch; g += world) {
    const PairTerms t = pair_gradient(g);
    sum.loss += t.loss;
    sum.similarity += t.similarity;
    sum.smoothness += t.smoothness;
    sum.dice += t.dice;
  }
  // The gradients and the terms, summed across ranks in one call. Distributed, every
  // parameter has a gradient (zeros where this rank's pairs gave none: another rank's may
  // have); alone, a parameter without one is left to Adam as it was.
  std::vector<at::Tensor> parts;
  for (auto& w : trained_) {
    if (collective && !w.grad().defined()) w.mutable_grad() = at::zeros_like(w);
    if (w.grad().defined()) parts.push_back(w.grad());
  }
  if (step_ + 1 == options_.inject_nan_at && !injected_) {
    injected_ = true;
    sum.loss = std::numeric_limits<double>::quiet_NaN();
  }
  // On the gradients' device (NCCL sums device tensors only).
  parts.push_back(at::tensor({sum.loss, sum.similarity, sum.smoothness, sum.dice}, at::kDouble).to(device_));
  const auto before = std::chrono::steady_clock::now();
  if (collective) collective->sum(parts);
  const double allreduce = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  const at::Tensor terms = parts.back() / double(options_.batch);
  parts.pop_back();
  StepReport r;
  r.loss = terms[0].item<double>();
  const bool guard = options_.spike_factor > 0;
  // After the sum, so that every rank sees the same fault and rolls back alike.
  if (guard && !std::isfinite(r.loss)) throw StepFault("non-finite training loss");
  std::vector<at::Tensor> flat;
  for (const at::Tensor& g : parts) flat.push_back(g.reshape({-1}));
  // One reduction, one synchronisation.
  r.gradient_norm = flat.empty() ? 0.0 : at::cat(flat).norm().item<double>();
  if (guard) run_.guard().check(r.gradient_norm);
  adam_->step();
  ++step_;
  r.step = step_;
  r.similarity = terms[1].item<double>();
  r.smoothness = terms[2].item<double>();
  r.dice = terms[3].item<double>();
  r.seconds_allreduce = collective ? allreduce : 0.0;
  if (!std::isfinite(r.loss)) throw std::runtime_error("the training loss is not finite at step " + std::to_string(step_));
  return r;
}

int64_t Trainer::validation_pair_count() const { return int64_t(validation_pairs(data_).size()); }

double Trainer::validate() { return validation_dice(*model_.network, data_, options_.seed, device_); }

std::vector<std::pair<std::string, std::string>> Trainer::fingerprint() const {
  const auto text = [](auto v) { return exact_text(double(v)); };
  // Named as the command's options were when runs began recording them ("lr", not the
  // --learning-rate of today), so that a refused resume says which one changed; kept so
  // that earlier runs still resume.
  std::vector<std::pair<std::string, std::string>> f = {
      {"lr", text(options_.learning_rate)},
      {"batch", text(options_.batch)},
      {"similarity", similarity_name(options_.similarity)},
      {"lambda", text(options_.smoothness)},
      {"dice-weight", text(options_.dice_weight)},
      {"augment", text(options_.augment)},
      {"deformation-voxels", text(options_.deformation_voxels)},
      {"synthetic", text(options_.synthetic_fraction)},
      {"objective", options_.objective ? options_.objective->to_string() : "-"},
      {"seed", text(options_.seed)},
      {"max-gradient-spike", text(options_.spike_factor)},
      {"training-subjects", text(data_.train.size())},
      {"validation-subjects", text(data_.validation.size())},
      {"atlas-mode", text(data_.atlas.has_value())},
      {"trainable", to_string(options_.trainable)},
      {"feature-noise", text(options_.feature_noise)}};
  // First: a refusal names them before the options they imply (a method's learning rate).
  f.insert(f.begin(), options_.run_fields.begin(), options_.run_fields.end());
  return f;
}

Archive Trainer::state() const {
  Archive a = model_archive(model_);
  a.fields.emplace_back("step", std::to_string(step_));
  save_run_fields(fingerprint(), a);
  run_.guard().save(a, "guard.");
  save_adam_state(*adam_, trained_, "adam/", a);
  for (auto& [name, t] : a.tensors) t = t.detach().cpu().clone();
  return a;
}

void Trainer::save_checkpoint(const std::string& path) { run_.checkpoint(path); }

void Trainer::distribute(Collective& collective) {
  std::vector<at::Tensor> weights;
  for (const auto& w : trained_) weights.push_back(w.detach());
  run_.distribute(collective, std::move(weights));
}

void Trainer::resume(const std::string& path) {
  const Archive a = run_.read(path);
  // Checkpoints from before the guard ran without it.
  check_run_fields(a, path, fingerprint(), "a run", {{"objective", "-"}, {"max-gradient-spike", "0"}, {"batch", "1"}, {"trainable", "all"},
                                                    {"feature-noise", "0"}});
  run_.restore(a, path);
}

void Trainer::load_state(const Archive& a, const std::string& path) {
  // The network and its grid: the model fields the checkpoint carries.
  std::vector<std::pair<std::string, std::string>> model_fields;
  for (const auto& [key, now] : model_archive(model_).fields) {
    if (key.rfind("note.", 0) != 0) model_fields.emplace_back(key, now);
  }
  // Checkpoints from before models kept their frame's orientation: the same frame.
  std::unordered_map<std::string, std::string> absent;
  if (!model_.info.orientation.empty()) absent["orientation"] = model_.info.orientation;
  check_run_fields(a, path, model_fields, "a run", absent, "");
  Model loaded = model_from_archive(a, path);
  if (loaded.info.network.feature_transforms != model_.info.network.feature_transforms) {
    throw ModelFileError(path + ": feature_transforms was " + (loaded.info.network.feature_transforms ? "1" : "0") +
                         ", is " + (model_.info.network.feature_transforms ? "1" : "0") + " now");
  }
  const at::Device& device = device_;
  c10::AutoGradMode no_grad(false);
  const auto mine = model_.network->parameters();
  const auto theirs = loaded.network->parameters();
  for (size_t i = 0; i < mine.size(); ++i) mine[i].copy_(theirs[i]);
  load_adam_state(*adam_, trained_, "adam/", tensors_by_name(a), device, path);
  try {
    step_ = std::stoll(a.field("step", path));
  } catch (const std::logic_error&) {
    throw ModelFileError(path + ": malformed step");
  }
  run_.guard().load(a, path, "guard.");
  set_learning_rate();
}

}  // namespace autoreg::registration
