// Option values as text ("70,20", "-1000,1000", "2,4,17"), read for the command line
// and the settings table (registration_settings.h) alike: a value that does not read is
// a base::UsageError naming the option.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autoreg/base/errors.h"
#include "autoreg/base/schema.h"

namespace autoreg::pipeline {

using UsageError = base::UsageError;

// A number as options write it, so that it reads back exactly ("0.5", "1e-05", "-1000").
inline std::string number_text(double v) { return base::exact_text(v); }

// "a,b,c" split at commas, each item read whole by `read` (as std::stoll or std::stod
// read: text and the count of characters used); an item it does not read whole, or an
// empty list, is a UsageError naming the option and saying that the item is not `what`.
template <typename T, typename Read>
std::vector<T> parse_list(const std::string& option, const std::string& text, Read read, const std::string& what) {
  std::vector<T> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    T value{};
    try {
      value = read(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) throw UsageError(option + ": '" + item + "' is not " + what);
    out.push_back(value);
  }
  if (out.empty()) throw UsageError(option + ": empty list");
  return out;
}

// "2,4,17" → {2, 4, 17}; anything else is a UsageError naming the option.
inline std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text) {
  return parse_list<int64_t>(option, text, [](const std::string& t, size_t* used) { return int64_t(std::stoll(t, used)); },
                             "an integer (expected e.g. 2,4,17)");
}

// "-1000,1000" → {-1000, 1000} (finite numbers); anything else is a UsageError naming the option.
inline std::vector<double> parse_number_list(const std::string& option, const std::string& text) {
  const std::vector<double> out =
      parse_list<double>(option, text, [](const std::string& t, size_t* used) { return std::stod(t, used); }, "a number");
  for (double v : out) {
    if (!std::isfinite(v)) throw UsageError(option + ": " + std::to_string(v) + " is not a finite number");
  }
  return out;
}

// Step counts per level, coarse level first ("70,20": --iterations, --affine-iterations):
// between `least` and `most` of them.
inline std::vector<unsigned> parse_counts(const std::string& option, const std::string& text, size_t least, size_t most) {
  const std::vector<int64_t> out = parse_int_list(option, text);
  for (int64_t n : out) {
    if (n < 0) throw UsageError(option + ": counts must be >= 0");
    if (n > 1000000) throw UsageError(option + ": " + std::to_string(n) + " steps is more than 1000000");
  }
  if (out.size() < least || out.size() > most) {
    throw UsageError(option + ": give " + (least == most ? std::to_string(least) : std::to_string(least) + " to " + std::to_string(most)) +
                     " counts, coarse level first");
  }
  return std::vector<unsigned>(out.begin(), out.end());
}

// A model grid as options write it ("96x112x96"), "" for none (sizes of 0).
inline std::string grid_text(const std::array<int64_t, 3>& g) {
  return g[0] > 0 ? std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) : std::string();
}

// A model grid as options write it, "96x112x96" (x or X) → {96, 112, 96}: three positive
// sizes, else a UsageError naming --grid.
inline std::array<int64_t, 3> parse_grid(const std::string& text) {
  std::string t = text;
  for (char& c : t) {
    if (c == 'x' || c == 'X') c = ',';
  }
  const std::vector<int64_t> v = parse_int_list("--grid", t);
  if (v.size() != 3 || v[0] <= 0 || v[1] <= 0 || v[2] <= 0) throw UsageError("--grid: three positive sizes DxHxW, e.g. 96x112x96");
  return {v[0], v[1], v[2]};
}

}  // namespace autoreg::pipeline
