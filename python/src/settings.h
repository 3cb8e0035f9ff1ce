// The registration settings from the keyword arguments of autoreg.register(), through
// the settings table (pipeline::setting_rows(), as `autoreg register` reads its options):
// the preset's settings, then every keyword given instead, in the table's order, each
// Python value turned into the command line's text (True → "true", [70, 20] → "70,20")
// and read by its row; pipeline::validate() (in pair_options) checks the result with the
// command line's messages.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "autoreg/pipeline/option_values.h"
#include "autoreg/pipeline/registration_settings.h"

namespace autoreg::python {

namespace py = pybind11;

// A keyword's value as the command line writes it.
inline std::string setting_text(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return py::cast<bool>(v) ? "true" : "false";
  if (py::isinstance<py::str>(v)) return py::cast<std::string>(v);
  if (py::isinstance<py::int_>(v)) return std::to_string(py::cast<long long>(v));
  if (py::isinstance<py::float_>(v)) return pipeline::number_text(py::cast<double>(v));
  if (py::isinstance<py::sequence>(v)) {
    std::string text;
    for (const py::handle& item : py::cast<py::sequence>(v)) text += (text.empty() ? "" : ",") + setting_text(item);
    return text;
  }
  return py::cast<std::string>(py::str(v));
}

inline pipeline::RegistrationSettings settings_of(const py::dict& kw) {
  std::map<std::string, std::string> given;
  for (const auto& item : kw) {
    pipeline::setting_row(py::cast<std::string>(item.first));  // an unknown name, even given None: SettingsError
    if (!item.second.is_none()) given[py::cast<std::string>(item.first)] = setting_text(item.second);
  }
  return pipeline::settings_given(given);
}

}  // namespace autoreg::python
