#include "autoreg/registration/train.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/metrics.h"
#include "autoreg/registration/regularization.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::registration {
namespace {

constexpr int64_t kNccWindow = 9;

// A subject's image for this step: its own, or one synthesised from its labels.
at::Tensor image_for_step(const Subject& s, const at::Tensor& table, bool synthesise) {
  const bool can_synthesise = s.labels.defined() && table.defined();
  if (can_synthesise && (synthesise || !s.image.defined())) return synthesize_image(s.labels, table);
  return s.image;
}

double mean_dice(const at::Tensor& a, const at::Tensor& b) {
  const std::vector<int64_t> labels = shared_labels(a, b);
  if (labels.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (int64_t l : labels) sum += dice(a, b, l);
  return sum / labels.size();
}

}  // namespace

Trainer::Trainer(Model& model, TrainingSet data, TrainOptions options)
    : model_(model),
      data_(std::move(data)),
      options_(std::move(options)),
      device_(options_.device == "cuda" ? at::kCUDA : at::kCPU) {
  check_similarity(options_.similarity);
  if (options_.device != "cpu" && options_.device != "cuda") {
    throw std::invalid_argument("device must be cpu or cuda, got '" + options_.device + "'");
  }
  if (options_.device == "cuda" && !at::hasCUDA()) {
    throw std::runtime_error("--device cuda: no CUDA device is available here");
  }
  const bool atlas = data_.atlas.has_value();
  if (data_.train.size() < (atlas ? 1u : 2u)) {
    throw std::invalid_argument(atlas ? "training needs at least one subject besides the atlas"
                                      : "pairwise training needs at least two subjects");
  }
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
  adam_ = std::make_unique<torch::optim::Adam>(model_.network->parameters(),
                                               torch::optim::AdamOptions(options_.learning_rate));
}

Trainer::~Trainer() = default;

StepReport Trainer::train_step() {
  const at::Device& device = device_;
  // This step's randomness depends on (seed, step) alone: resuming repeats it exactly.
  std::mt19937_64 rng(options_.seed * 0x9E3779B97F4A7C15ULL + uint64_t(step_));
  at::manual_seed(options_.seed * 1000003ULL + uint64_t(step_));
  std::uniform_real_distribution<double> uniform(0, 1);
  const auto& train = data_.train;
  const Subject& moving = train[rng() % train.size()];
  const Subject* fixed = data_.atlas ? &*data_.atlas : nullptr;
  if (!fixed) {
    const size_t a = &moving - train.data();
    fixed = &train[(a + 1 + rng() % (train.size() - 1)) % train.size()];
  }
  const bool synth_m = uniform(rng) < options_.synthetic_fraction;
  const bool synth_f = !data_.atlas && uniform(rng) < options_.synthetic_fraction;
  at::Tensor m = image_for_step(moving, data_.intensity_table, synth_m);
  at::Tensor f = data_.atlas ? fixed->image : image_for_step(*fixed, data_.intensity_table, synth_f);
  at::Tensor ml = moving.labels, fl = fixed->labels;
  if (options_.augment) {
    const at::Tensor field = random_smooth_field(m.sizes().slice(2), options_.deformation_voxels);
    m = ops::warp(m, field, ops::Interpolation::Linear, ops::Padding::Border);
    if (ml.defined()) ml = ops::warp(ml.to(at::kFloat), field, ops::Interpolation::Nearest, ops::Padding::Zeros);
    m = augment_intensity(m);
    if (!data_.atlas) f = augment_intensity(f);
  }
  m = m.to(device);
  f = f.to(device);

  model_.network->train();
  adam_->zero_grad();
  const at::Tensor u = model_.network->forward(m, f);
  const at::Tensor warped = ops::warp(m, u, ops::Interpolation::Linear, ops::Padding::Border);
  const at::Tensor sim = similarity_loss(options_.similarity, f, warped, kNccWindow);
  const at::Tensor smooth = gradient_l2(u);
  const std::vector<int64_t> labels =
      options_.dice_weight > 0 && ml.defined() && fl.defined() ? shared_labels(ml, fl) : std::vector<int64_t>{};
  // The similarity of a synthetic image to another image measures the synthesiser, not
  // the alignment: a pair with a synthetic image learns from its label maps alone (as
  // SynthMorph does) when it has them.
  const bool synthetic = (synth_m || !moving.image.defined()) || (!data_.atlas && (synth_f || !fixed->image.defined()));
  at::Tensor loss = (synthetic && !labels.empty() ? 0.0 : 1.0) * sim + options_.smoothness * smooth;
  double dice_term = 0;
  if (!labels.empty()) {
    // At half resolution (label probabilities pooled ×2, the field halved): a one-hot map
    // has a channel per label, and this term would otherwise cost more than the network.
    const auto half = [](const at::Tensor& t) { return at::avg_pool3d(t, {2, 2, 2}); };
    const at::Tensor warped_labels = ops::warp(half(one_hot(ml, labels).to(device)), half(u) * 0.5);
    const at::Tensor d = soft_dice_loss(half(one_hot(fl, labels).to(device)), warped_labels);
    loss = loss + options_.dice_weight * d;
    dice_term = d.item<double>();
  }
  loss.backward();
  adam_->step();
  ++step_;
  StepReport r;
  r.step = step_;
  r.loss = loss.item<double>();
  r.similarity = sim.item<double>();
  r.smoothness = smooth.item<double>();
  r.dice = dice_term;
  if (!std::isfinite(r.loss)) throw std::runtime_error("the training loss is not finite at step " + std::to_string(step_));
  return r;
}

std::vector<std::pair<const Subject*, const Subject*>> Trainer::validation_pairs() const {
  std::vector<std::pair<const Subject*, const Subject*>> pairs;  // (moving, fixed), both labelled
  const auto& v = data_.validation;
  for (size_t i = 0; i < v.size(); ++i) {
    const Subject* fixed = data_.atlas ? &*data_.atlas : v.size() > 1 ? &v[(i + 1) % v.size()] : nullptr;
    if (fixed && v[i].labels.defined() && fixed->labels.defined()) pairs.emplace_back(&v[i], fixed);
  }
  return pairs;
}

int64_t Trainer::validation_pair_count() const { return int64_t(validation_pairs().size()); }

double Trainer::validate() {
  const at::Device& device = device_;
  c10::AutoGradMode no_grad(false);
  model_.network->eval();
  const auto pairs = validation_pairs();
  double sum = 0;
  int n = 0;
  // Subjects without an image are seen through one synthetic image each, the same at
  // every validation.
  const auto image_of = [this](const Subject& s, int64_t index) {
    if (s.image.defined()) return s.image;
    at::manual_seed(options_.seed + 7777 + index);
    return synthesize_image(s.labels, data_.intensity_table);
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [moving, fixed] = pairs[i];
    const at::Tensor u = model_.network->forward(image_of(*moving, i).to(device),
                                                 image_of(*fixed, i + 1).to(device));
    const at::Tensor warped = ops::warp(moving->labels.to(device).to(at::kFloat), u,
                                        ops::Interpolation::Nearest, ops::Padding::Zeros);
    const double d = mean_dice(warped.cpu().to(at::kInt), fixed->labels);
    if (std::isfinite(d)) {
      sum += d;
      ++n;
    }
  }
  return n ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

std::vector<std::pair<std::string, std::string>> Trainer::fingerprint() const {
  const auto text = [](auto v) {  // the shortest text that reads back as v
    std::string t;
    for (int digits = 15; digits <= 17; ++digits) {
      std::ostringstream s;
      s.precision(digits);
      s << v;
      t = s.str();
      std::istringstream back(t);
      decltype(v) w{};
      if (back >> w && w == v) break;
    }
    return t;
  };
  // Named as the command's options are, so that a refused resume says which one changed.
  std::vector<std::pair<std::string, std::string>> f = {
      {"lr", text(options_.learning_rate)},
      {"similarity", options_.similarity},
      {"lambda", text(options_.smoothness)},
      {"dice-weight", text(options_.dice_weight)},
      {"augment", text(options_.augment)},
      {"deformation-voxels", text(options_.deformation_voxels)},
      {"synthetic", text(options_.synthetic_fraction)},
      {"seed", text(options_.seed)},
      {"training-subjects", text(data_.train.size())},
      {"validation-subjects", text(data_.validation.size())},
      {"atlas-mode", text(data_.atlas.has_value())}};
  return f;
}

void Trainer::save_checkpoint(const std::string& path) const {
  Archive a = model_archive(model_);
  a.fields.emplace_back("step", std::to_string(step_));
  for (const auto& [key, value] : fingerprint()) a.fields.emplace_back("run." + key, value);
  const auto params = model_.network->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = adam_->state().find(params[i].unsafeGetTensorImpl());
    if (it == adam_->state().end()) continue;
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*it->second);
    const std::string p = "adam/" + std::to_string(i) + "/";
    a.tensors.emplace_back(p + "step", at::full({1}, s.step(), at::kLong));
    a.tensors.emplace_back(p + "exp_avg", s.exp_avg());
    a.tensors.emplace_back(p + "exp_avg_sq", s.exp_avg_sq());
  }
  write_archive(path, "CHECKPOINT", a);
}

void Trainer::resume(const std::string& path) {
  const Archive a = read_archive(path, "CHECKPOINT");
  const auto same = [&](const std::string& stored, const std::string& name, const std::string& now) {
    const std::string then = a.has_field(stored) ? a.field(stored, path) : "(not recorded)";
    if (then != now) {
      throw ModelFileError(path + ": a checkpoint of a run with other options, data or network: " + name +
                           " was " + then + ", is " + now + " now");
    }
  };
  for (const auto& [key, now] : fingerprint()) same("run." + key, key, now);
  // The network and its grid: the model fields the checkpoint carries.
  for (const auto& [key, now] : model_archive(model_).fields) {
    if (key.rfind("note.", 0) != 0) same(key, key, now);
  }
  Model loaded = model_from_archive(a, path);
  const at::Device& device = device_;
  c10::AutoGradMode no_grad(false);
  const auto mine = model_.network->parameters();
  const auto theirs = loaded.network->parameters();
  for (size_t i = 0; i < mine.size(); ++i) mine[i].copy_(theirs[i]);
  std::unordered_map<std::string, at::Tensor> stored;
  for (const auto& [name, t] : a.tensors) stored[name] = t;
  adam_->state().clear();
  for (size_t i = 0; i < mine.size(); ++i) {
    const std::string p = "adam/" + std::to_string(i) + "/";
    if (!stored.count(p + "step")) continue;
    auto s = std::make_unique<torch::optim::AdamParamState>();
    s->step(stored[p + "step"].item<int64_t>());
    s->exp_avg(stored[p + "exp_avg"].to(device));
    s->exp_avg_sq(stored[p + "exp_avg_sq"].to(device));
    adam_->state()[mine[i].unsafeGetTensorImpl()] = std::move(s);
  }
  try {
    step_ = std::stoll(a.field("step", path));
  } catch (const std::logic_error&) {
    throw ModelFileError(path + ": malformed step");
  }
}

}  // namespace autoreg::registration
