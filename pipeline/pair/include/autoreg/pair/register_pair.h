// Registering two volumes on their own grids: intensity normalisation, affine
// pre-alignment in physical space, then a deformable field on the fixed grid (a trained
// network's prediction on the model frame, optionally refined by instance optimisation;
// or instance optimisation alone), composed into one map. What `autoreg register` runs,
// and (next) the ITK filter, so that both give the same result.
#pragma once

#include <ATen/core/Tensor.h>

#include <sys/resource.h>

#include <chrono>
#include <array>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autoreg/io/volume.h"
#include "autoreg/pair/preset_choice.h"
#include "autoreg/pair/registration_settings.h"
#include "autoreg/registration/affine.h"
#include "autoreg/registration/discrete.h"
#include "autoreg/registration/instance.h"
#include "autoreg/registration/model_file.h"

namespace autoreg::pipeline {

enum class Stages { AffineAndDeformable, AffineOnly, DeformableOnly };

struct PairOptions {
  // The settings these options were made from (pair_options): the --json record, and
  // under --preset auto what the preset chosen from the images is applied to. The pair
  // reads the options below, which pair_options translates from them.
  RegistrationSettings settings;
  Stages stages = Stages::AffineAndDeformable;
  registration::AffineOptions affine;
  registration::InstanceOptions deformable;
  std::string device = "cpu";  // "cpu" or "cuda"
  bool crop = true;             // fit the field only around the images' foreground
  // Both images' intensities mapped to [0, 1] from this window; none: a CT's (HU) or
  // each image's percentiles.
  std::optional<std::array<double, 2>> intensity_window;
  Padding padding;              // the rule for the constant outside a scan's field of view
  bool exclude_gas = false;     // gas inside the body left out of every similarity (HU-like scans)
  // The discrete search before instance optimisation (its radius and grid; the spacing
  // is the fixed image's); none: the velocity starts at zero.
  std::optional<registration::DiscreteOptions> discrete;
  AffineLimits affine_limits;   // the preset's: what the pre-alignment may do (pair_checks.h)
  // A trained model: its network predicts the deformable part (on its model frame,
  // pipeline/frame.h) instead of instance optimisation. Null: instance optimisation.
  std::shared_ptr<registration::Model> model;
  std::string model_file;  // where `model` was read from (resolved: never "default")
  // With a model: iterations of instance optimisation (at 1/2 resolution, the options of
  // `deformable`) that refine the network's field. 0: the network's field as it is.
  int64_t refine = 0;
  // The refinement's Adam step (half-resolution voxels): larger than instance
  // optimisation's, as its few steps start from the network's field. Chosen on the
  // validation pairs 06↔07 (3 squarings): 10 steps of 0.25 gave Dice 0.594/0.599, of
  // 0.2 0.593/0.599; 8 of 0.25 0.591/0.597, of 0.3 0.590/0.598; 6 of 0.25 or 0.3
  // 0.585-0.586/0.591-0.592 (15 of 0.1 with 5 squarings, the setting before: 0.590/0.597).
  double refine_learning_rate = 0.25;
  // Also the inverse map (PairResult::inverse): the deformable part's stationary
  // velocities integrated backwards (exp(−v), the exact inverse of the model, up to
  // the integration's error), then the affine inverted.
  bool inverse = false;
};

// The least relative gain in the deformable stage's similarity loss (on what both scans
// show, at about 3 mm) that keeps an affine: below it the headers' alignment is kept.
// On the planning CT → CBCT02 pair, which the clinic had aligned, the affine gained 0.2 %
// by a 25 % stretch and the rigid fit lost 3 % by a 23° turn; between OASIS subjects
// in native space the affine gains far more (docs/beyond-brains.md).
inline constexpr double kAffineGain = 0.01;
// Where that gain is judged when an image has a field of view (padding found) or a mask:
// this far or more inside its edge (registration::away_from_edge), so that a
// pre-alignment which gains only by pulling one image's edge onto the other's field of
// view is dropped. Brains without padding or masks are judged as before.
inline constexpr double kEdgeMarginMm = 15;
// Unless less than this share of an image's field of view lies that far inside its edge
// (a short cone-beam field of view): then the whole overlap is judged.
inline constexpr double kLeastInterior = 0.05;
// How far gas found inside a body is grown before it is left out (--exclude-gas): its
// blurred rim, about two in-plane voxels of a CT.
inline constexpr double kGasGrowMm = 2;

// The options that `settings` ask for (validated: SettingsError), with the model (its
// name resolved, "default" included: NoDefaultModel) read once (io::IoError or
// registration::ModelFileError for a file that is not one).
PairOptions pair_options(const RegistrationSettings& settings);
// `o` with the algorithm options of `settings` (validated) instead of its own: the stages,
// the affine's, instance optimisation's, the device and the refinement; the model, the
// progress callbacks, the crop and the inverse stay. What --preset auto runs once it has
// chosen (preset_choice.h).
PairOptions with_settings(const PairOptions& o, const RegistrationSettings& settings);

// An inverse map needs a model whose fields are velocities: for a model that is not
// diffeomorphic, an io::IoError naming its file (bad input), before any work. Nothing
// without a model.
void check_invertible(const PairOptions& options);

// The Adam steps per level the deformable stage's optimiser runs with these options:
// instance optimisation's iterations, or with a model the refinement's {0, refine} (1/2
// resolution only); none when the stages stop after the affine. For progress reports.
std::vector<int64_t> deformable_levels(const PairOptions& o);

// Cost-function masks of a pair, optional: 1×1×D×H×W float32, 1 inside and 0 outside,
// each on its own image's grid. They decide which voxels the similarity compares in the
// affine stage, instance optimisation and the refinement (a network's prediction does
// not use them); the field is still computed everywhere.
struct PairMasks {
  at::Tensor fixed, moving;
};

struct PairResult {
  at::Tensor affine;        // 4×4 float64, fixed → moving physical points (identity without it)
  at::Tensor displacement;  // 1×3×D×H×W float32, voxels of the fixed grid: the whole map
                            // x ↦ A·(x + u(x)) (affine after deformation) as a
                            // displacement, what is written to disk; the moving volume
                            // is sampled through it (io::sample_mapped)
  at::Tensor inverse;       // with PairOptions::inverse: 1×3×… float32 on the moving grid, in
                            // its voxels, the map back (io::inverse_map): a moving point y
                            // goes to the fixed point that `displacement` sends to y
  // How each image's intensities were normalised: {"percentiles"|"ct"|"window", lo, hi}.
  struct Intensity {
    std::string rule;
    double lo = 0, hi = 0;
  };
  Intensity fixed_intensity, moving_intensity;
  // Each image's field of view (registration/field_of_view.h): the padding value found or
  // given (none: every voxel counts) and the fraction of its grid outside.
  struct FieldOfView {
    std::optional<double> padding;
    double outside_fraction = 0;
    // With --exclude-gas: the gas found inside the body (of the grid) and the threshold
    // it was found below; none for a scan that is not Hounsfield-like.
    std::optional<double> gas_threshold;
    double gas_fraction = 0;
  };
  FieldOfView fixed_fov, moving_fov;
  // The masks the similarity used, on each image's grid (the given masks times the
  // fields of view; undefined: every voxel): what the failure checks compare.
  PairMasks masks;
  // The affine stage's own losses (registration/affine.h), and whether its fit was
  // dropped for the headers' alignment (kAffineGain); unset without the stage.
  std::optional<registration::AffineReport> affine_report;
  bool affine_dropped = false;
  // The evidence the pre-alignment was kept or dropped on: the similarity loss at the
  // headers' alignment and through the fit, on what both show `edge_margin_mm` or more
  // inside the fields of view's edges (0: the whole overlap, no field of view or mask).
  struct AffineJudgement {
    double loss_headers = 0, loss_fitted = 0, edge_margin_mm = 0;
  };
  AffineJudgement affine_judgement;
  // The preset registered with and why (--preset auto: chosen from the images), and the
  // options the pair ran with: the given ones under the chosen preset.
  PresetChoice preset;
  PairOptions options;
  // The registration's similarity loss (lower is better) between the fixed image and the
  // moving one on what both show, at the headers' alignment and through the result
  // (pipeline/pair/src/similarity_check.h): a result worse than its start is a failure.
  double loss_before = 0, loss_after = 0;
  // A second opinion the registration did not optimise (pair_checks.h: second_opinion):
  // the normalised mutual information of the two images at the headers' alignment and
  // through the result, on what both show `margin_mm` or more inside the fields of view's
  // edges (0: what both show, no field of view found).
  struct SecondOpinion {
    double before = std::numeric_limits<double>::quiet_NaN(), after = std::numeric_limits<double>::quiet_NaN();
    double margin_mm = 0;
  };
  SecondOpinion mutual_information;
};

// The process's peak resident memory so far, MiB.
inline double peak_resident_mib() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;
}

// Wall time of consecutive stages: each lap records the time since the previous one,
// and the process's peak resident memory so far (MiB) at the end of the stage.
class StageTimes {
 public:
  void lap(const std::string& stage) {
    const auto now = std::chrono::steady_clock::now();
    seconds_.emplace_back(stage, std::chrono::duration<double>(now - last_).count());
    peak_mib_.emplace_back(stage, peak_resident_mib());
    last_ = now;
  }
  const std::vector<std::pair<std::string, double>>& seconds() const { return seconds_; }
  const std::vector<std::pair<std::string, double>>& peak_mib() const { return peak_mib_; }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> seconds_, peak_mib_;
};


// A mask as PairMasks holds it: 1 where `data` is non-zero, float32. io::IoError naming
// `name` when nothing is inside.
at::Tensor binary_mask(const at::Tensor& data, const std::string& name);

// An image's intensities on [0, 1] as register_pair maps them: the options' window when
// given; a CT's (kCtWindow) when its low percentile is Hounsfield air; else its
// percentiles `percent` (inside `mask`, when given). *how says which.
at::Tensor normalise_intensities(const at::Tensor& data, const at::Tensor& mask, const PairOptions& options,
                      const std::array<double, 2>& percent, PairResult::Intensity* how);
// The percentiles that normalisation uses: the model's, else 0.5 and 99.5.
std::array<double, 2> normalisation_percentiles(const PairOptions& options);

// Registers `moving` to `fixed` (any grids, any orientation). Volumes: float32
// intensities, as read by io::read_volume; taken by value, so that a caller who moves
// them in lets their voxels go once they are normalised (memory). Records its stages in
// *times when given. Throws c10::Error / std::runtime_error.
PairResult register_pair(io::Volume fixed, io::Volume moving, const PairOptions& options = {},
                         StageTimes* times = nullptr, const PairMasks& masks = {});

}  // namespace autoreg::pipeline
