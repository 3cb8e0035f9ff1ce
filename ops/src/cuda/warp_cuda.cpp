// Binds the CUDA warp kernels (warp_kernel.cu) to autoreg::warp, autoreg::_warp_backward
// and autoreg::compose for CUDA tensors: checks, a device guard, the current stream,
// checked launches.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <array>
#include <tuple>

#include "../validate.h"
#include "warp_kernel.h"

namespace autoreg::ops::detail {
namespace {

cuda::Shape shape_of(const at::Tensor& t) {
  return {t.size(0), t.size(1), t.size(2), t.size(3), t.size(4)};
}

at::Tensor warp_cuda(const at::Tensor& image_in, const at::Tensor& displacement_in,
                     c10::string_view interpolation, c10::string_view padding) {
  const WarpSpec spec =
      check_warp_args("autoreg::warp", image_in, displacement_in, interpolation, padding);
  const c10::cuda::CUDAGuard guard(image_in.device());
  const at::Tensor image = image_in.contiguous();
  const at::Tensor disp = displacement_in.contiguous();
  at::Tensor out = at::empty(image.sizes(), image.options());
  if (out.numel() == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "autoreg::warp", [&] {
    C10_CUDA_CHECK(cuda::warp_forward<scalar_t>(
        shape_of(image), image.data_ptr<scalar_t>(), disp.data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>(), static_cast<int>(spec.mode), static_cast<int>(spec.pad),
        false, c10::cuda::getCurrentCUDAStream()));
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> warp_backward_cuda(const at::Tensor& grad_in,
                                                      const at::Tensor& image_in,
                                                      const at::Tensor& displacement_in,
                                                      c10::string_view interpolation,
                                                      c10::string_view padding,
                                                      std::array<bool, 2> output_mask) {
  const char* op = "autoreg::_warp_backward";
  const WarpSpec spec = check_warp_args(op, image_in, displacement_in, interpolation, padding);
  check_warp_grad(op, grad_in, image_in, displacement_in);
  const c10::cuda::CUDAGuard guard(image_in.device());
  const at::Tensor grad = grad_in.contiguous();
  const at::Tensor image = image_in.contiguous();
  const at::Tensor disp = displacement_in.contiguous();
  at::Tensor grad_image, grad_disp;
  if (output_mask[0]) grad_image = at::zeros(image.sizes(), image.options());
  if (output_mask[1]) {
    grad_disp = spec.mode == Mode::Linear ? at::empty(disp.sizes(), disp.options())
                                          : at::zeros(disp.sizes(), disp.options());
  }
  if (image.numel() == 0) {
    if (grad_disp.defined()) grad_disp.zero_();
    return {grad_image, grad_disp};
  }
  if (!output_mask[0] && !output_mask[1]) return {grad_image, grad_disp};
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "autoreg::_warp_backward", [&] {
    C10_CUDA_CHECK(cuda::warp_backward<scalar_t>(
        shape_of(image), grad.data_ptr<scalar_t>(), image.data_ptr<scalar_t>(),
        disp.data_ptr<scalar_t>(),
        grad_image.defined() ? grad_image.data_ptr<scalar_t>() : nullptr,
        grad_disp.defined() ? grad_disp.data_ptr<scalar_t>() : nullptr,
        static_cast<int>(spec.mode), static_cast<int>(spec.pad),
        c10::cuda::getCurrentCUDAStream()));
  });
  return {grad_image, grad_disp};
}

at::Tensor compose_cuda(const at::Tensor& u_in, const at::Tensor& v_in) {
  check_compose_args("autoreg::compose", u_in, v_in);
  const c10::cuda::CUDAGuard guard(u_in.device());
  const at::Tensor u = u_in.contiguous();
  const at::Tensor v = v_in.contiguous();
  at::Tensor out = at::empty(v.sizes(), v.options());
  if (out.numel() == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(u.scalar_type(), "autoreg::compose", [&] {
    C10_CUDA_CHECK(cuda::warp_forward<scalar_t>(
        shape_of(u), u.data_ptr<scalar_t>(), v.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
        static_cast<int>(Mode::Linear), static_cast<int>(Pad::Border), true,
        c10::cuda::getCurrentCUDAStream()));
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, CUDA, m) {
  m.impl("warp", &warp_cuda);
  m.impl("_warp_backward", &warp_backward_cuda);
  m.impl("compose", &compose_cuda);
}

}  // namespace autoreg::ops::detail
