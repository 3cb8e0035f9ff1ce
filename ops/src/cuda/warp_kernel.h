// Raw-pointer launchers of the CUDA warp kernels (warp_kernel.cu), kept free of torch
// headers so that nvcc compiles them quickly; warp_cuda.cpp binds them to the
// dispatcher. All tensors are contiguous N×C×D×H×W buffers on the current device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace autoreg::ops::cuda {

struct Shape {
  int64_t N, C, D, H, W;
};

// out = image(x + u(x)) (+ u(x) when add_displacement, which needs C == 3).
// mode: 0 linear, 1 nearest; pad: 0 zeros, 1 border (interp.h's Mode and Pad).
template <typename T>
cudaError_t warp_forward(const Shape& s, const T* image, const T* disp, T* out, int mode,
                         int pad, bool add_displacement, cudaStream_t stream);

// Accumulates into grad_image (zero-initialised, may be null) and writes grad_disp
// (may be null; for nearest mode the caller zero-fills it and it is left alone).
template <typename T>
cudaError_t warp_backward(const Shape& s, const T* grad, const T* image, const T* disp,
                          T* grad_image, T* grad_disp, int mode, int pad, cudaStream_t stream);

}  // namespace autoreg::ops::cuda
