// A text field of a CSV file (RFC 4180): as it is, or quoted where it holds a comma, a
// quote or a line break (its quotes doubled, a line break written as a space). One rule
// for every table autoreg writes: --pairs' summary.csv, a label table, evaluate --csv.
#pragma once

#include <string>
#include <string_view>

namespace autoreg::base {

inline std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' || c == '\r' ? ' ' : c);
  return quoted + "\"";
}

}  // namespace autoreg::base
