// Elapsed wall time for progress lines and reports.
#pragma once

#include <chrono>

namespace autoreg::base {

// Seconds on the steady clock since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace autoreg::base
