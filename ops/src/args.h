// The operators' arguments, checked and prepared the same way for every backend. Each
// failure throws c10::Error (a std::exception; torch.ops surfaces it as RuntimeError)
// whose message names the operator, the argument and the offending value.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

#include <array>

#include "interp.h"

namespace autoreg::ops::detail {

Mode parse_interpolation(const char* op, c10::string_view interpolation);
Pad parse_padding(const char* op, c10::string_view padding);

// A 5-D floating-point (float32/float64) tensor; channels > 0 also fixes dim 1.
void check_volume(const char* op, const char* name, const at::Tensor& t, int64_t channels);

// Same device, same dtype, same batch size and spatial size (dims 0, 2, 3, 4).
void check_compatible(const char* op, const char* name_a, const at::Tensor& a,
                      const char* name_b, const at::Tensor& b);

// Volumes whose voxel offsets must fit the kernels' 32-bit indices.
void check_indexable(const char* op, const char* name, const at::Tensor& t);


struct WarpSpec {
  Mode mode;
  Pad pad;
};

// Everything warp needs of its arguments; returns the parsed options.
WarpSpec check_warp_args(const char* op, const at::Tensor& image, const at::Tensor& displacement,
                         c10::string_view interpolation, c10::string_view padding);

// The incoming gradient of warp's backward: the shape of warp's output.
void check_warp_grad(const char* op, const at::Tensor& grad, const at::Tensor& image,
                     const at::Tensor& displacement);

// compose(u, v): two displacement fields on one grid.
void check_compose_args(const char* op, const at::Tensor& u, const at::Tensor& v);

// Checked, contiguous inputs and the output of warp or compose, allocated on the
// inputs' device. `empty` when there is nothing to compute.
struct WarpForward {
  WarpSpec spec;
  at::Tensor image, disp, out;
  bool empty;
};
WarpForward prepare_warp(const char* op, const at::Tensor& image, const at::Tensor& displacement,
                         c10::string_view interpolation, c10::string_view padding);
// compose(u, v) samples u (the "image") at x + v(x), linear with border padding.
WarpForward prepare_compose(const char* op, const at::Tensor& u, const at::Tensor& v);

// The same for warp's backward: grad_image (zeros) and grad_disp when requested by the
// mask; grad_disp is left uninitialised for linear sampling (the kernels write every
// voxel) and zero for nearest (piecewise constant: no displacement gradient).
struct WarpBackward {
  WarpSpec spec;
  at::Tensor grad, image, disp;
  at::Tensor grad_image, grad_disp;
  bool empty;
};
WarpBackward prepare_warp_backward(const char* op, const at::Tensor& grad,
                                   const at::Tensor& image, const at::Tensor& displacement,
                                   c10::string_view interpolation, c10::string_view padding,
                                   std::array<bool, 2> output_mask);

}  // namespace autoreg::ops::detail
