// The options that say how a pair is registered (pipeline::RegistrationSettings),
// declared once for `register` and `segment` (which registers every atlas as `register`
// does): the model or instance optimisation, the pyramid, the similarity, the smoothness,
// the affine, the seed.
#pragma once

#include <tclap/CmdLine.h>

#include <array>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "autoreg/pipeline/registration_settings.h"
#include "exit_codes.h"
#include "options.h"

namespace autoreg::apps {

struct RegistrationArgs {
  explicit RegistrationArgs(TCLAP::CmdLine& cmd)
      : preset("", "preset", preset_help(), false, defaults.preset, &preset_allowed, cmd),
        model("", "model", "a trained model (.autoreg, from autoreg train), or 'default' for the model shipped with autoreg; without it, instance optimisation", false, "", "FILE", cmd),
        refine("", "refine", "with --model: Adam steps of instance optimisation (1/2 resolution) refining the network's field (default 0)", false, 0, "K", cmd),
        iterations("", "iterations", "deformable Adam steps per pyramid level, coarse to fine: the last at 1/2 resolution, each before it halving again (default " + pipeline::counts_text(defaults.iterations) + ": 1/4 and 1/2; 1 to 6 levels, more for larger motion, e.g. 140,140,70,40 in --preset breathing; thick slices are not shrunk until the others reach them)", false, pipeline::counts_text(defaults.iterations), "N1,N2,...", cmd),
        affine_iterations("", "affine-iterations", "affine Adam steps at 4 mm and 2 mm (default " + pipeline::counts_text(defaults.affine_iterations) + ")", false, pipeline::counts_text(defaults.affine_iterations), "N1,N2", cmd),
        full_resolution("", "full-resolution", "the finest level compares the images at full resolution (the field stays on the half-resolution grid): finer detail at about twice the time; on in --preset breathing", cmd, false),
        compare_finer("", "compare-finer", "each pyramid level before the finest compares the images of the level N finer (at most 1/2 resolution), its field on its own grid: coarse levels that follow centimetres of motion by fine structure (vessels) rather than blurred blobs, at up to 1.5 times the time (default 0; 2 in --preset breathing)", false, defaults.compare_finer, "N", cmd),
        no_affine("", "no-affine", "skip the affine pre-alignment (already aligned inputs)", cmd, false),
        rigid("", "rigid", "a rigid pre-alignment (rotation and translation, 6 degrees of freedom) instead of the affine (12): the same patient's scans, where scale and shear would follow an organ that moves inside the body", cmd, false),
        similarity("", "similarity", "ncc (default), mse, or mind (MIND-SSC, for different modalities)", false, defaults.similarity, &similarity_allowed, cmd),
        regularizer("", "regularizer", "instance optimisation's smoothness: diffusion (default; smooth everywhere, brains) or tv (total variation: lets organs slide, e.g. the liver along the body wall)", false, defaults.regularizer, &regularizer_allowed, cmd),
        regularization("", "regularization", "weight λ of the smoothness term (default " + number_text(defaults.regularization) + ")", false, defaults.regularization, "λ", cmd),
        learning_rate("", "learning-rate", "instance optimisation's Adam step in half-resolution voxels of the finest axis, the same length in mm at every level (default " + number_text(defaults.learning_rate) + "; 0.4 in --preset breathing)", false, defaults.learning_rate, "STEP", cmd),
        ncc_window("", "ncc-window", "instance optimisation's local NCC window in mm along each axis, the same neighbourhood at every level and on thick slices (default 0: 5 voxels of each level, 7 at the finest)", false, defaults.ncc_window_mm, "MM", cmd),
        seed("", "seed", "random seed (default 0)", false, 0, "S", cmd),
        discrete("", "discrete", "before instance optimisation, search every displacement up to MM millimetres along each axis on a 4 mm grid (MIND-SSC cost volume, coupled convex optimisation, as ConvexAdam): motion larger than the pyramid follows from zero (default 0: none)", false, defaults.discrete_mm, "MM", cmd),
        padding("", "padding", "the constant outside a scan's field of view, which no similarity compares (a cone-beam CT's cylinder, a CT's reconstruction circle): auto (default: each image's minimum when it is at or below -500 and a constant around the field of view, not clamped air), none, or a value for both images (e.g. 0 for an MR crop); --json reports what was found", false, "auto", "auto|none|VALUE", cmd),
        intensity_window("", "intensity-window", "the intensities mapped to 0 and 1, clipped beyond, for both images (e.g. -1000,1000 for CT in HU); default automatic: a CT (its 0.5th percentile at or below -500 HU) gets -1000,1000, anything else its 0.5th and 99.5th percentiles", false, "", "LO,HI", cmd) {}

  // Options of this group given on the command line (to refuse them where nothing is registered).
  std::vector<const TCLAP::Arg*> all() const {
    return {&preset, &model, &refine, &iterations, &full_resolution, &compare_finer, &affine_iterations, &no_affine, &rigid, &similarity,
            &regularizer, &regularization, &learning_rate, &ncc_window, &seed, &intensity_window, &padding, &discrete};
  }

  // The settings the options give: the preset's, with the options given on the command
  // line instead (UsageError for counts out of range and options that contradict each
  // other; validate() checks the rest when the options are built).
  pipeline::RegistrationSettings settings(const std::string& device) const {
    pipeline::RegistrationSettings s = pipeline::preset_settings(preset.getValue());
    s.device = device;
    if (model.isSet()) s.model = model.getValue();
    if (no_affine.isSet()) s.affine = false;
    if (rigid.isSet()) {  // turns on the pre-alignment a preset may have turned off, unless --no-affine says so
      s.rigid = true;
      s.affine = !no_affine.isSet();
    }
    if (similarity.isSet()) s.similarity = similarity.getValue();
    if (regularizer.isSet()) s.regularizer = regularizer.getValue();
    if (regularization.isSet()) s.regularization = regularization.getValue();
    if (learning_rate.isSet()) s.learning_rate = learning_rate.getValue();
    if (ncc_window.isSet()) s.ncc_window_mm = ncc_window.getValue();
    if (iterations.isSet()) s.iterations = parse_counts("--iterations", iterations.getValue(), 1, 6);
    if (full_resolution.isSet()) s.full_resolution = true;
    if (compare_finer.isSet()) s.compare_finer = compare_finer.getValue();
    if (affine_iterations.isSet()) s.affine_iterations = parse_level_counts("--affine-iterations", affine_iterations.getValue());
    if (refine.getValue() < 0) throw UsageError("--refine must be >= 0");
    s.refine = unsigned(refine.getValue());
    s.seed = seed.getValue();
    if (intensity_window.isSet()) {
      const std::vector<double> w = parse_number_list("--intensity-window", intensity_window.getValue());
      if (w.size() != 2 || !(w[1] > w[0])) throw UsageError("--intensity-window: two values LO,HI with LO < HI, e.g. -1000,1000");
      s.intensity_window = std::array<double, 2>{w[0], w[1]};
    }
    if (discrete.isSet()) s.discrete_mm = discrete.getValue();
    if (padding.isSet()) s.padding = pipeline::parse_padding(padding.getValue());
    if (iterations.isSet() && !s.model.empty()) {
      throw UsageError("--iterations sets instance optimisation, which --model replaces (use --refine K)");
    }
    return s;
  }

  // --preset's help: every preset and what it is for.
  static std::string preset_help() {
    std::string text = "named settings for an anatomy and motion, which the options given override:";
    for (const pipeline::Preset& p : pipeline::presets()) text += " " + p.name + " (" + p.purpose + ");";
    return text + " default brain";
  }

  // "1", "0.5": a default as the help text shows it.
  static std::string number_text(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

  const pipeline::RegistrationSettings defaults;
  std::vector<std::string> preset_names = [] {
    std::vector<std::string> names;
    for (const pipeline::Preset& p : pipeline::presets()) names.push_back(p.name);
    return names;
  }();
  TCLAP::ValuesConstraint<std::string> preset_allowed{preset_names};
  std::vector<std::string> similarity_names{"ncc", "mse", "mind"};
  TCLAP::ValuesConstraint<std::string> similarity_allowed{similarity_names};
  std::vector<std::string> regularizer_names{"diffusion", "tv"};
  TCLAP::ValuesConstraint<std::string> regularizer_allowed{regularizer_names};
  TCLAP::ValueArg<std::string> preset;
  TCLAP::ValueArg<std::string> model;
  TCLAP::ValueArg<int> refine;
  TCLAP::ValueArg<std::string> iterations;
  TCLAP::ValueArg<std::string> affine_iterations;
  TCLAP::SwitchArg full_resolution;
  TCLAP::ValueArg<unsigned> compare_finer;
  TCLAP::SwitchArg no_affine;
  TCLAP::SwitchArg rigid;
  TCLAP::ValueArg<std::string> similarity;
  TCLAP::ValueArg<std::string> regularizer;
  TCLAP::ValueArg<double> regularization;
  TCLAP::ValueArg<double> learning_rate;
  TCLAP::ValueArg<double> ncc_window;
  TCLAP::ValueArg<uint64_t> seed;
  TCLAP::ValueArg<double> discrete;
  TCLAP::ValueArg<std::string> padding;
  TCLAP::ValueArg<std::string> intensity_window;
};

}  // namespace autoreg::apps
