// What each candidate operation (operations.h) computes, for code that builds the
// operations' convolutions itself (make_edge; the search's shared-kernel edges).
#pragma once

#include <cstdint>
#include <string>

namespace autoreg::registration {

// A dense convolution, or (separable) a depthwise one then a pointwise 1³; the kernel
// size and dilation of the dense or depthwise convolution.
struct OperationShape {
  bool separable;
  int64_t kernel, dilation;
};

// Throws std::invalid_argument for an unknown name, listing the known ones.
OperationShape operation_shape(const std::string& name);

}  // namespace autoreg::registration
