// Writing a job's settings as the command line that `autoreg <job>` parses back into the
// same settings (the supervisor's ranks, the search's evaluation watcher). Numbers are
// written so that they read back exactly (%.17g).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "autoreg/pipeline/option_values.h"

namespace autoreg::pipeline::detail {

class Arguments {
 public:
  explicit Arguments(const std::string& subcommand) { words_.push_back(subcommand); }
  Arguments& text(const char* option, const std::string& value) {
    words_.insert(words_.end(), {option, value});
    return *this;
  }
  // Only when not empty (an option left at its default).
  Arguments& text_if(const char* option, const std::string& value) { return value.empty() ? *this : text(option, value); }
  Arguments& number(const char* option, double value) { return text(option, number_text(value)); }
  Arguments& integer(const char* option, int64_t value) { return text(option, std::to_string(value)); }
  Arguments& unsigned_integer(const char* option, uint64_t value) { return text(option, std::to_string(value)); }
  Arguments& flag(const char* option, bool on) {
    if (on) words_.push_back(option);
    return *this;
  }
  // DxHxW, when a grid is given (all sizes > 0).
  Arguments& grid(const char* option, const std::array<int64_t, 3>& g) {
    return text_if(option, grid_text(g));
  }
  const std::vector<std::string>& words() const { return words_; }

 private:
  std::vector<std::string> words_;
};

}  // namespace autoreg::pipeline::detail
