// A number as settings, options, logs and checkpoints write it: the shortest text that
// reads back to the same double ("0.6", "1e-05", "0.10000000000000001" only where needed).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace autoreg::base {

inline std::string exact_text(double v) {
  char buf[40];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace autoreg::base
