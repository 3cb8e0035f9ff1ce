// Option parsing shared by the subcommands.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "autoreg/pipeline/default_model.h"
#include "autoreg/pipeline/output_files.h"
#include "autoreg/pipeline/qc_picture.h"
#include "autoreg/pipeline/register_pair.h"
#include "autoreg/registration/model_file.h"
#include "exit_codes.h"

namespace autoreg::apps {

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

// Adam steps per level, coarse level first ("70,20": --iterations, --affine-iterations).
// Step counts per level, coarse level first: between `least` and `most` of them.
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

// Two step counts (the affine's levels), coarse level first.
inline std::array<unsigned, 2> parse_level_counts(const std::string& option, const std::string& text) {
  const std::vector<unsigned> out = parse_counts(option, text, 2, 2);
  return {out[0], out[1]};
}

using pipeline::refuse_overwrite;

// An orientation code (e.g. LIA) checked for use with io::with_orientation; "" passes.
inline std::string checked_orientation(const std::string& option, const std::string& code) {
  if (code.empty()) return code;
  try {
    io::with_orientation(io::Geometry{}, code);
  } catch (const std::invalid_argument& e) {
    throw UsageError(option + ": " + e.what());
  }
  return code;
}

// "96x112x96" → {96, 112, 96}; a UsageError otherwise.
inline std::array<int64_t, 3> parse_grid(const std::string& text) {
  std::string t = text;
  for (char& c : t) {
    if (c == 'x' || c == 'X') c = ',';
  }
  const std::vector<int64_t> v = parse_int_list("--grid", t);
  if (v.size() != 3 || v[0] <= 0 || v[1] <= 0 || v[2] <= 0) {
    throw UsageError("--grid: three positive sizes DxHxW, e.g. 96x112x96");
  }
  return {v[0], v[1], v[2]};
}


// The pipeline's options for registration settings (pipeline::pair_options): settings
// that contradict each other are a UsageError, and so is "default" where no default model
// is installed; a model file that cannot be read is bad input.
inline pipeline::PairOptions pair_options_of(const pipeline::RegistrationSettings& settings) {
  try {
    return pipeline::pair_options(settings);
  } catch (const pipeline::NoDefaultModel& e) {
    throw UsageError(std::string("--model default: ") + e.what());
  }
}

// Whether a path names a PNG file (--qc pictures).
inline bool ends_with_png(const std::string& path) {
  return path.size() > 4 && (path.compare(path.size() - 4, 4, ".png") == 0 || path.compare(path.size() - 4, 4, ".PNG") == 0);
}

using pipeline::file_stem;
using pipeline::make_output_folder;
using pipeline::write_qc_picture;

}  // namespace autoreg::apps
