#include "args.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <limits>

namespace autoreg::ops::detail {

Mode parse_interpolation(const char* op, c10::string_view interpolation) {
  if (interpolation == "linear") return Mode::Linear;
  if (interpolation == "nearest") return Mode::Nearest;
  TORCH_CHECK(false, op, ": interpolation must be 'linear' or 'nearest', got '",
              std::string(interpolation.data(), interpolation.size()), "'");
}

Pad parse_padding(const char* op, c10::string_view padding) {
  if (padding == "zeros") return Pad::Zeros;
  if (padding == "border") return Pad::Border;
  TORCH_CHECK(false, op, ": padding must be 'zeros' or 'border', got '",
              std::string(padding.data(), padding.size()), "'");
}

void check_volume(const char* op, const char* name, const at::Tensor& t, int64_t channels) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
  TORCH_CHECK(t.dim() == 5, op, ": ", name, " must be a 5-D tensor N×C×D×H×W, got shape ",
              t.sizes());
  TORCH_CHECK(t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble, op, ": ",
              name, " must be float32 or float64, got ", t.scalar_type());
  if (channels > 0) {
    TORCH_CHECK(t.size(1) == channels, op, ": ", name, " must have ", channels,
                " channels (N×", channels, "×D×H×W), got shape ", t.sizes());
  }
}

void check_compatible(const char* op, const char* name_a, const at::Tensor& a,
                      const char* name_b, const at::Tensor& b) {
  TORCH_CHECK(a.device() == b.device(), op, ": ", name_a, " is on ", a.device(), " but ",
              name_b, " is on ", b.device());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), op, ": ", name_a, " is ", a.scalar_type(),
              " but ", name_b, " is ", b.scalar_type());
  TORCH_CHECK(a.size(0) == b.size(0), op, ": ", name_a, " has batch size ", a.size(0),
              " but ", name_b, " has ", b.size(0));
  TORCH_CHECK(a.sizes().slice(2) == b.sizes().slice(2), op, ": ", name_a,
              " has spatial size ", a.sizes().slice(2), " but ", name_b, " has ",
              b.sizes().slice(2), " (they must share one grid)");
}

void check_indexable(const char* op, const char* name, const at::Tensor& t) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  TORCH_CHECK(t.size(2) * t.size(3) * t.size(4) <= kMax, op, ": ", name,
              " has more voxels per channel than 2^31 - 1: ", t.sizes());
}

WarpSpec check_warp_args(const char* op, const at::Tensor& image, const at::Tensor& displacement,
                         c10::string_view interpolation, c10::string_view padding) {
  check_volume(op, "image", image, -1);
  check_volume(op, "displacement", displacement, 3);
  check_compatible(op, "image", image, "displacement", displacement);
  check_indexable(op, "image", image);
  return {parse_interpolation(op, interpolation), parse_padding(op, padding)};
}

void check_warp_grad(const char* op, const at::Tensor& grad, const at::Tensor& image,
                     const at::Tensor& displacement) {
  check_volume(op, "grad", grad, image.size(1));
  check_compatible(op, "grad", grad, "displacement", displacement);
}

void check_compose_args(const char* op, const at::Tensor& u, const at::Tensor& v) {
  check_volume(op, "u", u, 3);
  check_volume(op, "v", v, 3);
  check_compatible(op, "u", u, "v", v);
  check_indexable(op, "u", u);
}

WarpForward prepare_warp(const char* op, const at::Tensor& image, const at::Tensor& displacement,
                         c10::string_view interpolation, c10::string_view padding) {
  WarpForward a;
  a.spec = check_warp_args(op, image, displacement, interpolation, padding);
  a.image = image.contiguous();
  a.disp = displacement.contiguous();
  a.out = at::empty(a.image.sizes(), a.image.options());
  a.empty = a.out.numel() == 0;
  return a;
}

WarpForward prepare_compose(const char* op, const at::Tensor& u, const at::Tensor& v) {
  check_compose_args(op, u, v);
  WarpForward a;
  a.spec = {Mode::Linear, Pad::Border};
  a.image = u.contiguous();
  a.disp = v.contiguous();
  a.out = at::empty(a.disp.sizes(), a.disp.options());
  a.empty = a.out.numel() == 0;
  return a;
}

WarpBackward prepare_warp_backward(const char* op, const at::Tensor& grad,
                                   const at::Tensor& image, const at::Tensor& displacement,
                                   c10::string_view interpolation, c10::string_view padding,
                                   std::array<bool, 2> output_mask) {
  WarpBackward a;
  a.spec = check_warp_args(op, image, displacement, interpolation, padding);
  check_warp_grad(op, grad, image, displacement);
  a.grad = grad.contiguous();
  a.image = image.contiguous();
  a.disp = displacement.contiguous();
  if (output_mask[0]) a.grad_image = at::zeros(a.image.sizes(), a.image.options());
  a.empty = a.image.numel() == 0 || (!output_mask[0] && !output_mask[1]);
  if (output_mask[1]) {
    a.grad_disp = a.spec.mode == Mode::Linear && !a.empty
                      ? at::empty(a.disp.sizes(), a.disp.options())
                      : at::zeros(a.disp.sizes(), a.disp.options());
  }
  return a;
}

}  // namespace autoreg::ops::detail
