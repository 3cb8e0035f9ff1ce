// Training a registration network on volumes already on the model's grid (preprocessing
// from files to that grid is io/'s and the pipeline's): unsupervised similarity +
// smoothness, plus soft Dice where label maps exist; atlas mode (every subject to one
// atlas) or pairwise mode (random pairs of subjects); augmentation by random smooth
// deformations and intensity changes; synthetic images from label maps. Checkpoints hold
// the model, the optimiser's state and the step, and every step's randomness is seeded
// from (seed, step), so a resumed run continues exactly as the uninterrupted one.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autoreg/registration/archive.h"
#include "autoreg/registration/collective.h"
#include "autoreg/registration/guarded_run.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/objective.h"
#include "autoreg/registration/stepped_run.h"
#include "autoreg/registration/training_set.h"

namespace torch::optim {
class Adam;
}

namespace autoreg::registration {

// What the optimiser changes: all parameters, the weights (all but the feature
// transformations' γ and β, which stay as they are: training with feature noise), or the
// feature transformations alone (the weights frozen: FTM adaptation; the model needs
// the transformations).
enum class Trainable { All, Weights, FeatureTransforms };
// all | weights | feature_transforms (the name checkpoints keep).
const char* to_string(Trainable t);

struct TrainOptions {
  int64_t steps = 1000;
  double learning_rate = 1e-4;           // Adam
  // Pairs per step over all ranks (the global batch): the loss is their mean. Pair g of
  // step s is drawn from (seed, s, g) whichever rank draws it (rank r draws g = r,
  // r + world, ...), so a step's gradient does not depend on the number of ranks, and a
  // checkpoint resumes with any. With batch 1 a step is what it was before batches.
  int64_t batch = 1;
  Similarity similarity = Similarity::Ncc;  // local NCC (window 9), MSE or MIND-SSC
  double smoothness = 1.0;               // λ on the L2 gradient of the displacement
  // When set, the image terms and smoothness weighted by these (objective.h; e.g. the
  // search's λ) replace `similarity` and `smoothness`.
  std::optional<ObjectiveWeights> objective;
  double dice_weight = 1.0;              // on soft Dice where both label maps exist
  bool augment = true;                   // random smooth deformation + intensity
  double deformation_voxels = 2.0;       // σ of the random deformation, model voxels
  double synthetic_fraction = 0.0;       // share of steps whose moving image is synthesised
  uint64_t seed = 0;
  std::string device = "cpu";
  Trainable trainable = Trainable::All;
  // > 0: random per-channel scale and shift of every operation's features in each
  // training step, σ = this (feature_transform.h; the model needs the transformations).
  double feature_noise = 0;
  // More of what a checkpoint must match to be resumed (name, value), e.g. adapt's base
  // model and method.
  std::vector<std::pair<std::string, std::string>> run_fields;
  // A step whose gradient norm exceeds this many times its running average is a fault
  // (fault_guard.h): the weights and Adam go back to the last good state (kept every
  // kSnapshotEvery steps, and at every checkpoint), the learning rate halves, and training
  // goes on; a non-finite loss or gradient is one too. More than max_rollbacks in a row
  // stop the run. On OASIS-TRT a network trained 450 steps well and then warped
  // everything away within 10 steps (smoothness term 0.03 → 2.8 → 4.9, soft Dice loss
  // 0.64 → 1.0), every value finite. 0: off (a non-finite loss stops the run).
  double spike_factor = 20;
  int64_t max_rollbacks = 5;
  static constexpr int64_t kSnapshotEvery = 10;
  int64_t inject_nan_at = -1;  // tests: this step's loss is NaN (1-based), once
  // Checkpoints written by a background thread while training goes on (false: the step
  // waits for the file; for measuring what that costs).
  bool async_checkpoints = true;
};

struct StepReport {
  int64_t step = 0;  // steps done, this one included
  double loss = 0, similarity = 0, smoothness = 0, dice = 0;  // dice: the soft Dice loss term
  double gradient_norm = 0;
  int64_t rollbacks = 0;  // so far (a rollback makes `step` go back)
  double seconds_allreduce = 0;  // spent summing across ranks (data-parallel)
};

class Trainer : public SteppedRun {
 public:
  Trainer(Model& model, TrainingSet data, TrainOptions options);
  ~Trainer() override;

  // Data-parallel from here on: this process draws its share of each step's pairs and the
  // gradients are summed across `collective`'s ranks; rank 0's weights are copied to the
  // others now. Only rank 0 writes checkpoints. `collective` outlives the trainer.
  void distribute(Collective& collective) override;
  int rank() const override { return run_.rank(); }
  Collective* collective() const override { return run_.collective(); }

  int64_t steps_done() const override { return step_; }
  int64_t rollbacks() const override { return run_.guard().rollbacks(); }
  StepReport train_step();
  // Mean Dice of the validation subjects' warped label maps (nearest) against the atlas
  // (atlas mode) or of consecutive validation subjects (pairwise); NaN without labels.
  double validate() override;
  // How many labelled pairs validate() averages over (0: it returns NaN).
  int64_t validation_pair_count() const override;

  // The model, the optimiser's state, the step and the run's options (named), written
  // atomically (by rank 0 alone; every rank keeps the state as the one a fault rolls back
  // to); resume() refuses a checkpoint of other options, network or grid, naming
  // what differs.
  void save_checkpoint(const std::string& path) override;
  // Until the checkpoints handed to the background writer are on disk (throws a failed
  // write's error). Call before reporting a run complete or stopped.
  void finish_checkpoints() override { run_.finish_checkpoints(); }
  void resume(const std::string& path) override;

 private:
  std::vector<std::pair<std::string, std::string>> fingerprint() const;
  StepReport try_step();
  struct PairTerms;
  PairTerms pair_gradient(int64_t g);
  bool injected_ = false;
  Archive state() const;
  void load_state(const Archive& a, const std::string& path);
  Model& model_;
  TrainingSet data_;
  TrainOptions options_;
  at::Device device_;
  std::vector<at::Tensor> trained_;  // the parameters Adam changes (options_.trainable)
  std::unique_ptr<torch::optim::Adam> adam_;
  int64_t step_ = 0;
  void set_learning_rate();
  // The fault guard (in checkpoints, so a resumed run repeats), the last good state, the
  // checkpoints and the ranks.
  GuardedRun run_;
};

}  // namespace autoreg::registration
