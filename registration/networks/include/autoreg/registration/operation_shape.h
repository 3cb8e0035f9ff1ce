// What each candidate operation (operations.h) computes, for code that builds the
// operations' convolutions itself (make_edge; the search's shared-kernel edges).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace autoreg::registration {

// A dense convolution, or (separable) a depthwise one then a pointwise 1³; the kernel
// size and dilation of the dense or depthwise convolution.
struct OperationShape {
  bool separable;
  int64_t kernel, dilation;
};

// In kOperations order (operations.h).
inline constexpr std::array<OperationShape, 8> kOperationShapes = {{{false, 1, 1},
                                                                    {false, 3, 1},
                                                                    {false, 5, 1},
                                                                    {true, 3, 1},
                                                                    {true, 5, 1},
                                                                    {false, 3, 2},
                                                                    {false, 5, 2},
                                                                    {false, 7, 2}}};

// The shape of an operation by name; throws std::invalid_argument for an unknown name,
// listing the known ones.
OperationShape operation_shape(const std::string& name);

}  // namespace autoreg::registration
