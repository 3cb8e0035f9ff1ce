#include "autoreg/pipeline/registration_settings.h"

#include <cmath>
#include <cstdio>

namespace autoreg::pipeline {

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"brain", "adult brain MRI between subjects: affine, two levels, diffusion (the defaults)"},
      {"breathing", "the same patient's frames across breathing (liver, lungs): no affine, four levels "
                    "(140,140,70,40), each coarse level compared on the images of two levels finer, total "
                    "variation (sliding organs, weight 1), Adam steps of 0.4 voxels, the finest level at full "
                    "resolution"}};
  return all;
}

RegistrationSettings preset_settings(const std::string& name) {
  RegistrationSettings s;
  s.preset = name;
  if (name == "brain") return s;
  if (name == "breathing") {
    s.affine = false;
    s.iterations = {140, 140, 70, 40};
    s.regularizer = "tv";
    s.regularization = 1.0;
    s.learning_rate = 0.4;
    s.full_resolution = true;
    s.compare_finer = 2;
    return s;
  }
  std::string known;
  for (const Preset& p : presets()) known += (known.empty() ? "" : ", ") + p.name;
  throw SettingsError("--preset must be one of " + known + ", got '" + name + "'");
}

void apply_preset(const std::string& name, RegistrationSettings& s) {
  const RegistrationSettings p = preset_settings(name);
  s.preset = p.preset;
  s.affine = p.affine;
  s.rigid = p.rigid;
  s.iterations = p.iterations;
  s.regularizer = p.regularizer;
  s.regularization = p.regularization;
  s.learning_rate = p.learning_rate;
  s.full_resolution = p.full_resolution;
  s.compare_finer = p.compare_finer;
}

void validate(const RegistrationSettings& s) {
  if (s.similarity != "ncc" && s.similarity != "mse" && s.similarity != "mind") {
    throw SettingsError("--similarity must be ncc, mse or mind, got '" + s.similarity + "'");
  }
  if (s.device != "cpu" && s.device != "cuda") throw SettingsError("--device must be cpu or cuda, got '" + s.device + "'");
  if (!s.affine && !s.deformable) {
    throw SettingsError("--affine-only and --no-affine exclude each other (neither the affine nor the deformable stage is on)");
  }
  if (s.regularizer != "diffusion" && s.regularizer != "tv") {
    throw SettingsError("--regularizer must be diffusion or tv, got '" + s.regularizer + "'");
  }
  if (s.rigid && !s.affine) throw SettingsError("--rigid and --no-affine exclude each other (--rigid sets the affine stage)");
  if (!(s.regularization >= 0)) throw SettingsError("--regularization must be >= 0");
  if (!(s.learning_rate > 0) || !std::isfinite(s.learning_rate)) {
    throw SettingsError("--learning-rate must be a positive number of voxels");
  }
  if (!s.model.empty() && !s.deformable) {
    throw SettingsError("--model and --affine-only exclude each other (the model is the deformable stage)");
  }
  if (s.iterations.empty() || s.iterations.size() > 6) {
    throw SettingsError("--iterations: 1 to 6 counts, one per pyramid level, got " + std::to_string(s.iterations.size()));
  }
  if (s.compare_finer > 5) throw SettingsError("--compare-finer: 0 to 5 levels, got " + std::to_string(s.compare_finer));
  if (!(s.ncc_window_mm >= 0) || !std::isfinite(s.ncc_window_mm)) {
    throw SettingsError("--ncc-window must be 0 (windows in voxels) or a positive number of mm");
  }
  if (s.intensity_window && !((*s.intensity_window)[1] > (*s.intensity_window)[0])) {
    throw SettingsError("--intensity-window LO,HI needs LO < HI");
  }
  if (s.refine > 0 && s.model.empty()) throw SettingsError("--refine needs --model (refinement iterations need a model to refine)");
}

std::string counts_text(const std::array<unsigned, 2>& counts) {
  return counts_text(std::vector<unsigned>(counts.begin(), counts.end()));
}

std::string counts_text(const std::vector<unsigned>& counts) {
  std::string text;
  for (unsigned n : counts) text += (text.empty() ? "" : ",") + std::to_string(n);
  return text;
}

std::vector<std::string> to_arguments(const RegistrationSettings& s) {
  const RegistrationSettings preset = preset_settings(s.preset);
  const auto number = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  std::vector<std::string> w{"--preset", s.preset, "--device", s.device};
  if (!s.deformable) throw SettingsError("the deformable stage off (--affine-only) has no option here");
  if (s.rigid) {
    w.push_back("--rigid");
  } else if (!s.affine) {
    w.push_back("--no-affine");
  } else if (!preset.affine) {
    throw SettingsError("the affine stage on under --preset " + s.preset + " has no option (only --rigid turns it on)");
  }
  if (s.full_resolution) {
    w.push_back("--full-resolution");
  } else if (preset.full_resolution) {
    throw SettingsError("--full-resolution off under --preset " + s.preset + " has no option");
  }
  if (!s.model.empty()) w.insert(w.end(), {"--model", s.model, "--refine", std::to_string(s.refine)});
  if (s.model.empty()) w.insert(w.end(), {"--iterations", counts_text(s.iterations)});
  w.insert(w.end(), {"--affine-iterations", counts_text(s.affine_iterations), "--similarity", s.similarity,
                     "--regularizer", s.regularizer, "--regularization", number(s.regularization),
                     "--learning-rate", number(s.learning_rate), "--ncc-window", number(s.ncc_window_mm),
                     "--compare-finer", std::to_string(s.compare_finer),
                     "--seed", std::to_string(s.seed)});
  if (s.intensity_window) {
    w.insert(w.end(), {"--intensity-window", number((*s.intensity_window)[0]) + "," + number((*s.intensity_window)[1])});
  }
  return w;
}

}  // namespace autoreg::pipeline
