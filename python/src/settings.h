// The registration settings from the keyword arguments of autoreg.register(), through
// the settings table (pipeline::setting_rows(), as `autoreg register` reads its options):
// the preset's settings, then every keyword given instead, in the table's order, each
// Python value turned into the command line's text (True → "true", [70, 20] → "70,20")
// and read by its row; pipeline::validate() (in pair_options) checks the result with the
// command line's messages.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "autoreg/pipeline/registration_settings.h"

namespace autoreg::python {

namespace py = pybind11;

// The keywords autoreg.register takes for settings: the table's (its docstring names each: a test).
inline std::vector<std::string> setting_keywords() {
  std::vector<std::string> out;
  for (const pipeline::SettingRow& r : pipeline::setting_rows()) out.push_back(r.keyword);
  return out;
}

// A keyword's value as the command line writes it.
inline std::string setting_text(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return py::cast<bool>(v) ? "true" : "false";
  if (py::isinstance<py::str>(v)) return py::cast<std::string>(v);
  if (py::isinstance<py::int_>(v)) return std::to_string(py::cast<long long>(v));
  if (py::isinstance<py::float_>(v)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", py::cast<double>(v));
    return buf;
  }
  if (py::isinstance<py::sequence>(v)) {
    std::string text;
    for (const py::handle& item : py::cast<py::sequence>(v)) text += (text.empty() ? "" : ",") + setting_text(item);
    return text;
  }
  return py::cast<std::string>(py::str(v));
}

inline pipeline::RegistrationSettings settings_of(const py::dict& kw) {
  for (const auto& item : kw) pipeline::setting_row(py::cast<std::string>(item.first));  // unknown: SettingsError
  const auto has = [&](const std::string& key) { return kw.contains(key) && !kw[key.c_str()].is_none(); };
  pipeline::RegistrationSettings s = pipeline::preset_settings(has("preset") ? py::cast<std::string>(kw["preset"]) : "brain");
  for (const pipeline::SettingRow& row : pipeline::setting_rows()) {
    if (row.keyword != "preset" && has(row.keyword)) row.set(s, setting_text(kw[row.keyword.c_str()]));
  }
  if (has("iterations") && !s.model.empty()) {
    throw pipeline::SettingsError("--iterations sets instance optimisation, which --model replaces (use --refine K)");
  }
  return s;
}

}  // namespace autoreg::python
