// What the long-running jobs (train, search, adapt) share: their JSON-lines logs and
// durations for progress lines.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autoreg/base/atomic_file.h"
#include "autoreg/io/volume.h"

namespace autoreg::pipeline {

// On resume: the log keeps the lines of the steps the checkpoint holds (a run stopped
// between checkpoints logged steps that will be run again), rewritten atomically.
// Returns the seconds field of the last line kept (the time those steps took).
inline double cut_log_to(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return 0;  // no log (moved away): a new one starts
  std::string kept, line;
  double seconds = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step")) continue;  // a line cut short by the stop
    if (j["step"].get<int64_t>() > step) break;
    kept += line + "\n";
    seconds = j.value("seconds", seconds);
  }
  try {
    base::write_file_atomically(path, kept);
  } catch (const base::WriteError&) {
    throw io::IoError(path + ": cannot rewrite the log");
  }
  return seconds;
}

// A validation Dice for a progress line: "0.734", or "-" when there is none (NaN).
inline std::string dice_text(double v) { return std::isfinite(v) ? std::to_string(v).substr(0, 5) : "-"; }

// "1h05m" or "3m07s".
inline std::string duration(double seconds) {
  char buf[32];
  const long s = long(seconds + 0.5);
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  }
  return buf;
}

}  // namespace autoreg::pipeline
