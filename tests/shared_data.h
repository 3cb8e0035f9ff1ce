// Where tests find the real volumes of ../shared/data: $AUTOREG_TEST_DATA when set,
// else the folder beside the clone (AUTOREG_DEFAULT_TEST_DATA, set by tests/CMakeLists.txt).
// Tests that need them skip when they are absent.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace autoreg::test {

inline std::filesystem::path shared_data() {
  const char* env = std::getenv("AUTOREG_TEST_DATA");
  return env && *env ? std::filesystem::path(env) : std::filesystem::path(AUTOREG_DEFAULT_TEST_DATA);
}

}  // namespace autoreg::test
