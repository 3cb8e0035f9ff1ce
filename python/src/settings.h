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

#include "autoreg/base/schema.h"
#include "autoreg/pair/option_values.h"
#include "autoreg/pair/registration_settings.h"

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

// A job's settings from keyword arguments, each read by the row of its keyword (base/schema.h)
// as the command line reads the option's text; base::UsageError for an unknown keyword.
template <typename S>
void set_through_rows(const base::Schema<S>& schema, const py::dict& kw, S& s) {
  for (const auto& item : kw) {
    const std::string keyword = py::cast<std::string>(item.first);
    const base::SettingField<S>* row = base::find_row(schema, keyword);
    if (!row) throw base::UsageError("unknown keyword '" + keyword + "' (known: " + base::keywords_text(schema) + ")");
    if (!item.second.is_none()) row->set(s, setting_text(item.second));
  }
}

// A job's rows for its docstring and the tests: keyword, option, default (the struct's),
// the value a switch sets, a sample value, help, whether the command line requires it.
template <typename S>
py::list rows_of(const base::Schema<S>& schema, const S& defaults) {
  py::list rows;
  for (const auto& r : schema) {
    py::dict d;
    d["keyword"] = r.keyword;
    d["option"] = r.option;
    d["default"] = r.get(defaults);
    d["switch_sets"] = r.switch_sets;
    d["sample"] = r.sample;
    d["help"] = r.help;
    d["required"] = r.required;
    rows.append(d);
  }
  return rows;
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
