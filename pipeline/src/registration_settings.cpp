#include "autoreg/pipeline/registration_settings.h"

namespace autoreg::pipeline {

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
  if (!s.model.empty() && !s.deformable) {
    throw SettingsError("--model and --affine-only exclude each other (the model is the deformable stage)");
  }
  if (s.iterations.empty() || s.iterations.size() > 6) {
    throw SettingsError("--iterations: 1 to 6 counts, one per pyramid level, got " + std::to_string(s.iterations.size()));
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

}  // namespace autoreg::pipeline
