// CPU kernels of autoreg::warp, autoreg::_warp_backward and autoreg::compose.
//
// Work is split into rows (n, d, h) over at::parallel_for. Each row is processed in
// blocks of kBlock voxels in two phases: first the neighbour offsets and weights of
// every voxel of the block, a SIMD loop (neighbours.h); then the reads of the
// neighbours, as scalar loads (AVX2 gathers were slower on the CPUs measured), for a
// group of channels at a time so that each voxel's set-up is loaded once per group.
// The backward pass computes the displacement gradient and scatters the image
// gradient in the same pass; threads other than the first scatter into private
// buffers summed afterwards, so results are deterministic for a given thread count.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <vector>

#include "../args.h"
#include "neighbours.h"

namespace autoreg::ops::detail {
namespace {

// out = image(x + u(x)) [+ u(x) when AddDisplacement: compose's fused addition].
template <typename T, Pad P, bool AddDisplacement>
void forward_linear(const Grid& g, const T* img, const T* disp, T* out) {
  const int64_t plane = g.plane();
  for_each_row(g, [&](int64_t n, int64_t d, int64_t h, int) {
    const int64_t row = (d * g.H + h) * g.W;
    const T* u = disp + n * 3 * plane + row;
    const T* src_n = img + n * g.C * plane;
    T* dst_n = out + n * g.C * plane + row;
    LinearBlock<T, false> b;
    for (int64_t w0 = 0; w0 < g.W; w0 += kBlock) {
      const int32_t len = static_cast<int32_t>(std::min<int64_t>(kBlock, g.W - w0));
      setup_linear<T, P, false>(g, u + w0, u + plane + w0, u + 2 * plane + w0, d, h, w0, len, b);
      // Scalar gathers (no `omp simd`): AVX2 gathers are slower than scalar loads on
      // the CPUs measured (AMD Zen 3); each voxel's neighbours are loaded once and used
      // for every channel.
      if (g.C == 1) {
        const T* src = src_n;
        T* dst = dst_n + w0;
        for (int32_t j = 0; j < len; ++j) {
          T acc = b.w[0][j] * src[b.off[0][j]] + b.w[1][j] * src[b.off[1][j]] +
                  b.w[2][j] * src[b.off[2][j]] + b.w[3][j] * src[b.off[3][j]] +
                  b.w[4][j] * src[b.off[4][j]] + b.w[5][j] * src[b.off[5][j]] +
                  b.w[6][j] * src[b.off[6][j]] + b.w[7][j] * src[b.off[7][j]];
          if constexpr (AddDisplacement) acc += u[w0 + j];
          dst[j] = acc;
        }
        continue;
      }
      for (int64_t c0 = 0; c0 < g.C; c0 += kChannelGroup) {
        const int64_t c1 = std::min<int64_t>(g.C, c0 + kChannelGroup);
        for (int32_t j = 0; j < len; ++j) {
          const T* src = src_n + c0 * plane;
          T* dst = dst_n + c0 * plane + w0 + j;
          for (int64_t c = c0; c < c1; ++c, src += plane, dst += plane) {
            T acc = b.w[0][j] * src[b.off[0][j]] + b.w[1][j] * src[b.off[1][j]] +
                    b.w[2][j] * src[b.off[2][j]] + b.w[3][j] * src[b.off[3][j]] +
                    b.w[4][j] * src[b.off[4][j]] + b.w[5][j] * src[b.off[5][j]] +
                    b.w[6][j] * src[b.off[6][j]] + b.w[7][j] * src[b.off[7][j]];
            if constexpr (AddDisplacement) acc += u[c * plane + w0 + j];
            *dst = acc;
          }
        }
      }
    }
  });
}

template <typename T, Pad P>
void forward_nearest(const Grid& g, const T* img, const T* disp, T* out) {
  const int64_t plane = g.plane();
  for_each_row(g, [&](int64_t n, int64_t d, int64_t h, int) {
    const int64_t row = (d * g.H + h) * g.W;
    const T* u = disp + n * 3 * plane + row;
    NearestBlock<T> b;
    for (int64_t w0 = 0; w0 < g.W; w0 += kBlock) {
      const int32_t len = static_cast<int32_t>(std::min<int64_t>(kBlock, g.W - w0));
      setup_nearest<T, P>(g, u + w0, u + plane + w0, u + 2 * plane + w0, d, h, w0, len, b);
      for (int64_t c = 0; c < g.C; ++c) {
        const T* src = img + (n * g.C + c) * plane;
        T* dst = out + (n * g.C + c) * plane + row + w0;
        for (int32_t j = 0; j < len; ++j) dst[j] = b.inside[j] != T(0) ? src[b.off[j]] : T(0);
      }
    }
  });
}

// One pass per voxel: the 8 neighbours are read once per channel and give both the
// displacement gradient (derivatives of the trilinear form, axis by axis) and the
// image gradient's scatter.
template <typename T, Pad P>
void backward_linear(const Grid& g, const T* grad, const T* img, const T* disp,
                     ScatterTargets<T>* gimg, T* gdisp) {
  const int64_t plane = g.plane();
  for_each_row(g, [&](int64_t n, int64_t d, int64_t h, int tid) {
    const int64_t row = (d * g.H + h) * g.W;
    const T* u = disp + n * 3 * plane + row;
    T* gimg_n = gimg ? gimg->get(tid) + n * g.C * plane : nullptr;
    LinearBlock<T, true> b;
    for (int64_t w0 = 0; w0 < g.W; w0 += kBlock) {
      const int32_t len = static_cast<int32_t>(std::min<int64_t>(kBlock, g.W - w0));
      setup_linear<T, P, true>(g, u + w0, u + plane + w0, u + 2 * plane + w0, d, h, w0, len, b);
      alignas(64) T acc[3][kBlock] = {};
      for (int64_t c0 = 0; c0 < g.C; c0 += kChannelGroup) {
        const int64_t c1 = std::min<int64_t>(g.C, c0 + kChannelGroup);
        for (int32_t j = 0; j < len; ++j) {
          const VoxelWeights<T> v(b, j);
          T sd = 0, sh = 0, sw = 0;
          const T* src = img + (n * g.C + c0) * plane;
          const T* go = grad + (n * g.C + c0) * plane + row + w0 + j;
          T* gi = gimg_n ? gimg_n + c0 * plane : nullptr;
          for (int64_t c = c0; c < c1; ++c, src += plane, go += plane) {
            const T gv = *go;
            if (gdisp) {
              const Trilinear<T> t = trilinear(src, v);
              sd += gv * t.d;
              sh += gv * t.h;
              sw += gv * t.w;
            }
            if (gi) {
              const T a0 = gv * v.lo[0], a1 = gv * v.hi[0];
              const T b00 = a0 * v.lo[1], b01 = a0 * v.hi[1], b10 = a1 * v.lo[1], b11 = a1 * v.hi[1];
              const int32_t* o = v.off;
              const T lw = v.lo[2], hw = v.hi[2];
              gi[o[0]] += b00 * lw;  gi[o[1]] += b00 * hw;
              gi[o[2]] += b01 * lw;  gi[o[3]] += b01 * hw;
              gi[o[4]] += b10 * lw;  gi[o[5]] += b10 * hw;
              gi[o[6]] += b11 * lw;  gi[o[7]] += b11 * hw;
              gi += plane;
            }
          }
          acc[0][j] += sd;
          acc[1][j] += sh;
          acc[2][j] += sw;
        }
      }
      if (gdisp) {
        T* out = gdisp + n * 3 * plane + row + w0;
        for (int a = 0; a < 3; ++a) std::copy(acc[a], acc[a] + len, out + a * plane);
      }
    }
  });
}

template <typename T, Pad P>
void backward_nearest(const Grid& g, const T* grad, const T* disp, ScatterTargets<T>& gimg) {
  const int64_t plane = g.plane();
  for_each_row(g, [&](int64_t n, int64_t d, int64_t h, int tid) {
    const int64_t row = (d * g.H + h) * g.W;
    const T* u = disp + n * 3 * plane + row;
    T* gimg_n = gimg.get(tid) + n * g.C * plane;
    NearestBlock<T> b;
    for (int64_t w0 = 0; w0 < g.W; w0 += kBlock) {
      const int32_t len = static_cast<int32_t>(std::min<int64_t>(kBlock, g.W - w0));
      setup_nearest<T, P>(g, u + w0, u + plane + w0, u + 2 * plane + w0, d, h, w0, len, b);
      for (int64_t c = 0; c < g.C; ++c) {
        const T* go = grad + (n * g.C + c) * plane + row + w0;
        T* dst = gimg_n + c * plane;
        for (int32_t j = 0; j < len; ++j) dst[b.off[j]] += b.inside[j] * go[j];
      }
    }
  });
}

at::Tensor warp_cpu(const at::Tensor& image, const at::Tensor& displacement,
                    c10::string_view interpolation, c10::string_view padding) {
  const WarpForward a = prepare_warp("autoreg::warp", image, displacement, interpolation, padding);
  if (a.empty) return a.out;
  const Grid g = grid_of(a.image);
  AT_DISPATCH_FLOATING_TYPES(a.image.scalar_type(), "autoreg::warp", [&] {
    with_padding(a.spec.pad, [&](auto pad) {
      constexpr Pad P = decltype(pad)::value;
      const auto* img = a.image.data_ptr<scalar_t>();
      const auto* disp = a.disp.data_ptr<scalar_t>();
      auto* out = a.out.data_ptr<scalar_t>();
      if (a.spec.mode == Mode::Linear) {
        forward_linear<scalar_t, P, false>(g, img, disp, out);
      } else {
        forward_nearest<scalar_t, P>(g, img, disp, out);
      }
    });
  });
  return a.out;
}

std::tuple<at::Tensor, at::Tensor> warp_backward_cpu(const at::Tensor& grad,
                                                     const at::Tensor& image,
                                                     const at::Tensor& displacement,
                                                     c10::string_view interpolation,
                                                     c10::string_view padding,
                                                     std::array<bool, 2> output_mask) {
  WarpBackward a = prepare_warp_backward("autoreg::_warp_backward", grad, image, displacement,
                                         interpolation, padding, output_mask);
  if (a.empty) return {a.grad_image, a.grad_disp};
  const Grid g = grid_of(a.image);
  AT_DISPATCH_FLOATING_TYPES(a.image.scalar_type(), "autoreg::_warp_backward", [&] {
    with_padding(a.spec.pad, [&](auto pad) {
      constexpr Pad P = decltype(pad)::value;
      std::optional<ScatterTargets<scalar_t>> targets;
      if (a.grad_image.defined()) targets.emplace(a.grad_image);
      const auto* go = a.grad.data_ptr<scalar_t>();
      const auto* disp = a.disp.data_ptr<scalar_t>();
      if (a.spec.mode == Mode::Linear) {
        backward_linear<scalar_t, P>(
            g, go, a.image.data_ptr<scalar_t>(), disp, targets ? &*targets : nullptr,
            a.grad_disp.defined() ? a.grad_disp.data_ptr<scalar_t>() : nullptr);
      } else if (targets) {
        backward_nearest<scalar_t, P>(g, go, disp, *targets);
      }
      if (targets) a.grad_image = targets->reduce();
    });
  });
  return {a.grad_image, a.grad_disp};
}

at::Tensor compose_cpu(const at::Tensor& u, const at::Tensor& v) {
  const WarpForward a = prepare_compose("autoreg::compose", u, v);
  if (a.empty) return a.out;
  const Grid g = grid_of(a.image);
  AT_DISPATCH_FLOATING_TYPES(a.image.scalar_type(), "autoreg::compose", [&] {
    forward_linear<scalar_t, Pad::Border, true>(g, a.image.data_ptr<scalar_t>(),
                                                a.disp.data_ptr<scalar_t>(),
                                                a.out.data_ptr<scalar_t>());
  });
  return a.out;
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, CPU, m) {
  m.impl("warp", &warp_cpu);
  m.impl("_warp_backward", &warp_backward_cpu);
  m.impl("compose", &compose_cpu);
}

}  // namespace autoreg::ops::detail
