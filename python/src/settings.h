// The registration settings from the keyword arguments of autoreg.register(): the
// preset's settings (--preset), then every keyword given instead, as `autoreg register`
// turns its options into settings (apps/registration_args.h); pipeline::validate() (in
// pair_options) checks the result with the command line's messages.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>
#include <string>
#include <vector>

#include "autoreg/pipeline/registration_settings.h"

namespace autoreg::python {

namespace py = pybind11;

// The keywords autoreg.register takes for settings (its docstring names each: a test).
inline const std::set<std::string>& setting_keywords() {
  static const std::set<std::string> known = {
      "preset", "model", "device", "affine", "deformable", "rigid", "similarity", "regularizer", "regularization",
      "learning_rate", "ncc_window_mm", "iterations", "full_resolution", "compare_finer", "affine_iterations", "refine", "seed", "intensity_window", "padding", "discrete_mm"};
  return known;
}

inline pipeline::RegistrationSettings settings_of(const py::dict& kw) {
  const std::set<std::string>& known = setting_keywords();
  for (const auto& item : kw) {
    const std::string key = py::cast<std::string>(item.first);
    if (!known.count(key)) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
      throw pipeline::SettingsError("unknown setting '" + key + "' (known: " + names + ")");
    }
  }
  const auto has = [&](const char* key) { return kw.contains(key) && !kw[key].is_none(); };
  pipeline::RegistrationSettings s = pipeline::preset_settings(has("preset") ? py::cast<std::string>(kw["preset"]) : "brain");
  if (has("device")) s.device = py::cast<std::string>(kw["device"]);
  if (has("model")) s.model = py::cast<std::string>(kw["model"]);
  if (has("affine")) s.affine = py::cast<bool>(kw["affine"]);
  if (has("rigid") && py::cast<bool>(kw["rigid"])) {  // turns on the pre-alignment a preset turned off, unless affine=False
    s.rigid = true;
    s.affine = has("affine") ? py::cast<bool>(kw["affine"]) : true;
  }
  if (has("deformable")) s.deformable = py::cast<bool>(kw["deformable"]);
  if (has("similarity")) s.similarity = py::cast<std::string>(kw["similarity"]);
  if (has("regularizer")) s.regularizer = py::cast<std::string>(kw["regularizer"]);
  if (has("regularization")) s.regularization = py::cast<double>(kw["regularization"]);
  if (has("learning_rate")) s.learning_rate = py::cast<double>(kw["learning_rate"]);
  if (has("ncc_window_mm")) s.ncc_window_mm = py::cast<double>(kw["ncc_window_mm"]);
  if (has("iterations")) {
    const auto counts = py::cast<std::vector<long long>>(kw["iterations"]);
    s.iterations.clear();
    for (long long c : counts) {
      if (c < 1) throw pipeline::SettingsError("--iterations: every count must be >= 1");
      s.iterations.push_back(unsigned(c));
    }
    if (!s.model.empty()) throw pipeline::SettingsError("--iterations sets instance optimisation, which --model replaces (use --refine K)");
  }
  if (has("full_resolution")) s.full_resolution = py::cast<bool>(kw["full_resolution"]);
  if (has("compare_finer")) {
    const long long n = py::cast<long long>(kw["compare_finer"]);
    if (n < 0) throw pipeline::SettingsError("--compare-finer: 0 to 5 levels, got " + std::to_string(n));
    s.compare_finer = unsigned(n);  // validate() refuses more than 5
  }
  if (has("affine_iterations")) {
    const auto counts = py::cast<std::vector<long long>>(kw["affine_iterations"]);
    if (counts.size() != 2 || counts[0] < 0 || counts[1] < 0) {
      throw pipeline::SettingsError("--affine-iterations: two counts >= 0, at 4 mm and 2 mm");
    }
    s.affine_iterations = {unsigned(counts[0]), unsigned(counts[1])};
  }
  if (has("refine")) {
    const long long refine = py::cast<long long>(kw["refine"]);
    if (refine < 0) throw pipeline::SettingsError("--refine must be >= 0");
    s.refine = unsigned(refine);
  }
  if (has("seed")) s.seed = py::cast<uint64_t>(kw["seed"]);
  if (has("intensity_window")) {
    const auto w = py::cast<std::vector<double>>(kw["intensity_window"]);
    if (w.size() != 2 || !(w[1] > w[0])) throw pipeline::SettingsError("--intensity-window: two values LO,HI with LO < HI, e.g. -1000,1000");
    s.intensity_window = std::array<double, 2>{w[0], w[1]};
  }
  if (has("discrete_mm")) s.discrete_mm = py::cast<double>(kw["discrete_mm"]);
  if (has("padding")) {  // "auto", "none" or a number
    const py::object p = kw["padding"];
    s.padding = py::isinstance<py::str>(p) ? pipeline::parse_padding(py::cast<std::string>(p))
                                           : pipeline::Padding{pipeline::Padding::Rule::Value, py::cast<double>(p)};
  }
  return s;
}

}  // namespace autoreg::python
