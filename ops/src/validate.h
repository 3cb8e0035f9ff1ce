// Input checks shared by every backend of the operators. Each failure throws
// c10::Error (a std::exception; torch.ops surfaces it as RuntimeError) whose message
// names the operator, the argument and the offending value.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

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

}  // namespace autoreg::ops::detail

namespace autoreg::ops::detail {

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

}  // namespace autoreg::ops::detail
