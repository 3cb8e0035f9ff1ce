// What the benchmark files share.
#pragma once

#include <ATen/core/Tensor.h>
#ifdef AUTOREG_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace autoreg::bench {

// Waits for the device's queued work, so that a timed region covers it (no-op on CPU).
inline void sync(const at::Device& device) {
#ifdef AUTOREG_WITH_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

}  // namespace autoreg::bench
