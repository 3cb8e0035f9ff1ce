// Binds the CUDA warp kernels (warp_kernel.cu) to autoreg::warp, autoreg::_warp_backward
// and autoreg::compose for CUDA tensors: checks, a device guard, the current stream,
// checked launches.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <array>
#include <tuple>

#include "../args.h"
#include "warp_kernel.h"

namespace autoreg::ops::detail {
namespace {

cuda::Shape shape_of(const at::Tensor& t) {
  return {t.size(0), t.size(1), t.size(2), t.size(3), t.size(4)};
}

// Both forward operators: warp (add = false) and compose (add = true, C = 3).
at::Tensor launch_forward(const WarpForward& a, bool add) {
  if (a.empty) return a.out;
  AT_DISPATCH_FLOATING_TYPES(a.image.scalar_type(), "autoreg::warp_forward", [&] {
    C10_CUDA_CHECK(cuda::warp_forward<scalar_t>(
        shape_of(a.image), a.image.data_ptr<scalar_t>(), a.disp.data_ptr<scalar_t>(),
        a.out.data_ptr<scalar_t>(), static_cast<int>(a.spec.mode), static_cast<int>(a.spec.pad),
        add, c10::cuda::getCurrentCUDAStream()));
  });
  return a.out;
}

at::Tensor warp_cuda(const at::Tensor& image, const at::Tensor& displacement,
                     c10::string_view interpolation, c10::string_view padding) {
  const c10::cuda::CUDAGuard guard(image.device());
  return launch_forward(
      prepare_warp("autoreg::warp", image, displacement, interpolation, padding), false);
}

at::Tensor compose_cuda(const at::Tensor& u, const at::Tensor& v) {
  const c10::cuda::CUDAGuard guard(u.device());
  return launch_forward(prepare_compose("autoreg::compose", u, v), true);
}

std::tuple<at::Tensor, at::Tensor> warp_backward_cuda(const at::Tensor& grad,
                                                      const at::Tensor& image,
                                                      const at::Tensor& displacement,
                                                      c10::string_view interpolation,
                                                      c10::string_view padding,
                                                      std::array<bool, 2> output_mask) {
  const c10::cuda::CUDAGuard guard(image.device());
  const WarpBackward a = prepare_warp_backward("autoreg::_warp_backward", grad, image,
                                               displacement, interpolation, padding, output_mask);
  if (a.empty) return {a.grad_image, a.grad_disp};
  AT_DISPATCH_FLOATING_TYPES(a.image.scalar_type(), "autoreg::_warp_backward", [&] {
    C10_CUDA_CHECK(cuda::warp_backward<scalar_t>(
        shape_of(a.image), a.grad.data_ptr<scalar_t>(), a.image.data_ptr<scalar_t>(),
        a.disp.data_ptr<scalar_t>(),
        a.grad_image.defined() ? a.grad_image.data_ptr<scalar_t>() : nullptr,
        a.grad_disp.defined() ? a.grad_disp.data_ptr<scalar_t>() : nullptr,
        static_cast<int>(a.spec.mode), static_cast<int>(a.spec.pad),
        c10::cuda::getCurrentCUDAStream()));
  });
  return {a.grad_image, a.grad_disp};
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, CUDA, m) {
  m.impl("warp", &warp_cuda);
  m.impl("_warp_backward", &warp_backward_cuda);
  m.impl("compose", &compose_cuda);
}

}  // namespace autoreg::ops::detail
