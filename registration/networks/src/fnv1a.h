// FNV-1a 64: the checksum of archives (archive.h) and of a network's weights
// (network.h: weights_checksum).
#pragma once

#include <cstddef>
#include <cstdint>

namespace autoreg::registration::detail {

inline constexpr uint64_t kFnvOffset = 1469598103934665603ULL;

inline uint64_t fnv1a(const char* data, size_t n, uint64_t h = kFnvOffset) {
  for (size_t i = 0; i < n; ++i) {
    h ^= uint8_t(data[i]);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace autoreg::registration::detail
