// The device a command runs on, parsed from its name once (`--device cpu|cuda`, a
// settings struct's `device`), so that no other code compares device names.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace autoreg::ops {

// "cpu" or "cuda" as an at::Device. Throws std::invalid_argument for another name, and
// std::runtime_error("--device cuda: <why>") when CUDA cannot be used here (it loads the
// CUDA plugin: ops.h, cuda_available).
at::Device parse_device(const std::string& name);

}  // namespace autoreg::ops
