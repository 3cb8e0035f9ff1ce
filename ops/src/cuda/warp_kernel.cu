// CUDA kernels of autoreg::warp, autoreg::_warp_backward and autoreg::compose: one
// thread per output voxel, the interpolation math of interp.h, atomics for the
// image gradient's scatter.
#include "warp_kernel.h"

#include <algorithm>

#include "../interp.h"

namespace autoreg::ops::cuda {
namespace {

using detail::LinearAxis;
using detail::Pad;

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<int64_t>(b, 65535LL * 32));
}

// One output voxel: its grid position, its offset within a channel plane, and its
// displacement (channel 0; channels 1 and 2 follow a plane apart).
template <typename T>
struct Site {
  int64_t n, d, h, w, at, plane;
  const T* u;
};

template <typename T>
__device__ __forceinline__ Site<T> site_of(int64_t i, const Shape& s, const T* disp) {
  Site<T> v;
  v.plane = s.D * s.H * s.W;
  v.n = i / v.plane;
  v.at = i - v.n * v.plane;
  v.w = v.at % s.W;
  v.h = (v.at / s.W) % s.H;
  v.d = v.at / (s.W * s.H);
  v.u = disp + v.n * 3 * v.plane + v.at;
  return v;
}

// The nearest voxel's offset in a plane, or -1 when it lies outside (zeros padding).
template <typename T, Pad P>
__device__ __forceinline__ int64_t nearest_offset(const Site<T>& x, const Shape& s) {
  T md, mh, mw;
  const int64_t id = detail::nearest_axis<T, P>(T(x.d) + x.u[0], int32_t(s.D), md);
  const int64_t ih = detail::nearest_axis<T, P>(T(x.h) + x.u[x.plane], int32_t(s.H), mh);
  const int64_t iw = detail::nearest_axis<T, P>(T(x.w) + x.u[2 * x.plane], int32_t(s.W), mw);
  return md * mh * mw != T(0) ? (id * s.H + ih) * s.W + iw : -1;
}

// Grid-stride loop over every output voxel of the batch.
#define AUTOREG_FOR_EACH_VOXEL(i, s)                                             \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x,              \
               i##_end = (s).N * (s).D * (s).H * (s).W;                          \
       i < i##_end; i += int64_t(blockDim.x) * gridDim.x)

template <typename T, Pad P, bool Add>
__global__ void forward_linear(Shape s, const T* __restrict__ img, const T* __restrict__ disp,
                               T* __restrict__ out) {
  AUTOREG_FOR_EACH_VOXEL(i, s) {
    const Site<T> x = site_of(i, s, disp);
    const LinearAxis<T> ad = detail::linear_axis<T, P>(T(x.d) + x.u[0], int32_t(s.D));
    const LinearAxis<T> ah = detail::linear_axis<T, P>(T(x.h) + x.u[x.plane], int32_t(s.H));
    const LinearAxis<T> aw = detail::linear_axis<T, P>(T(x.w) + x.u[2 * x.plane], int32_t(s.W));
    const int64_t HW = s.H * s.W;
    const int64_t o00 = ad.i0 * HW + ah.i0 * s.W, o01 = ad.i0 * HW + ah.i1 * s.W;
    const int64_t o10 = ad.i1 * HW + ah.i0 * s.W, o11 = ad.i1 * HW + ah.i1 * s.W;
    const T w00 = ad.w0 * ah.w0, w01 = ad.w0 * ah.w1, w10 = ad.w1 * ah.w0, w11 = ad.w1 * ah.w1;
    for (int64_t c = 0; c < s.C; ++c) {
      const T* src = img + (x.n * s.C + c) * x.plane;
      T acc = w00 * (aw.w0 * src[o00 + aw.i0] + aw.w1 * src[o00 + aw.i1]) +
              w01 * (aw.w0 * src[o01 + aw.i0] + aw.w1 * src[o01 + aw.i1]) +
              w10 * (aw.w0 * src[o10 + aw.i0] + aw.w1 * src[o10 + aw.i1]) +
              w11 * (aw.w0 * src[o11 + aw.i0] + aw.w1 * src[o11 + aw.i1]);
      if (Add) acc += x.u[c * x.plane];
      out[(x.n * s.C + c) * x.plane + x.at] = acc;
    }
  }
}

template <typename T, Pad P>
__global__ void forward_nearest(Shape s, const T* __restrict__ img, const T* __restrict__ disp,
                                T* __restrict__ out) {
  AUTOREG_FOR_EACH_VOXEL(i, s) {
    const Site<T> x = site_of(i, s, disp);
    const int64_t off = nearest_offset<T, P>(x, s);
    for (int64_t c = 0; c < s.C; ++c) {
      const int64_t base = (x.n * s.C + c) * x.plane;
      out[base + x.at] = off >= 0 ? img[base + off] : T(0);
    }
  }
}

template <typename T, Pad P>
__global__ void backward_linear(Shape s, const T* __restrict__ grad, const T* __restrict__ img,
                                const T* __restrict__ disp, T* __restrict__ gimg,
                                T* __restrict__ gdisp) {
  AUTOREG_FOR_EACH_VOXEL(i, s) {
    const Site<T> x = site_of(i, s, disp);
    const int64_t plane = x.plane, at = x.at;
    const LinearAxis<T> a[3] = {
        detail::linear_axis<T, P>(T(x.d) + x.u[0], int32_t(s.D)),
        detail::linear_axis<T, P>(T(x.h) + x.u[plane], int32_t(s.H)),
        detail::linear_axis<T, P>(T(x.w) + x.u[2 * plane], int32_t(s.W))};
    int64_t off[8];
    T w[8], dw[3][8];
    for (int k = 0; k < 8; ++k) {
      const int ka = k >> 2, kb = (k >> 1) & 1, kc = k & 1;
      off[k] = ((ka ? a[0].i1 : a[0].i0) * s.H + (kb ? a[1].i1 : a[1].i0)) * s.W +
               (kc ? a[2].i1 : a[2].i0);
      const T f0 = ka ? a[0].w1 : a[0].w0, f1 = kb ? a[1].w1 : a[1].w0, f2 = kc ? a[2].w1 : a[2].w0;
      const T g0 = (ka ? a[0].m1 : -a[0].m0) * a[0].dpos;
      const T g1 = (kb ? a[1].m1 : -a[1].m0) * a[1].dpos;
      const T g2 = (kc ? a[2].m1 : -a[2].m0) * a[2].dpos;
      w[k] = f0 * f1 * f2;
      dw[0][k] = g0 * f1 * f2;
      dw[1][k] = f0 * g1 * f2;
      dw[2][k] = f0 * f1 * g2;
    }
    T gd = 0, gh = 0, gw = 0;
    for (int64_t c = 0; c < s.C; ++c) {
      const int64_t base = (x.n * s.C + c) * plane;
      const T g = grad[base + at];
      if (gdisp) {
        const T* src = img + base;
        for (int k = 0; k < 8; ++k) {
          const T v = src[off[k]];
          gd += g * dw[0][k] * v;
          gh += g * dw[1][k] * v;
          gw += g * dw[2][k] * v;
        }
      }
      if (gimg && g != T(0)) {
        for (int k = 0; k < 8; ++k) {
          if (w[k] != T(0)) atomicAdd(gimg + base + off[k], w[k] * g);
        }
      }
    }
    if (gdisp) {
      T* o = gdisp + x.n * 3 * plane + at;
      o[0] = gd;
      o[plane] = gh;
      o[2 * plane] = gw;
    }
  }
}

template <typename T, Pad P>
__global__ void backward_nearest(Shape s, const T* __restrict__ grad, const T* __restrict__ disp,
                                 T* __restrict__ gimg) {
  AUTOREG_FOR_EACH_VOXEL(i, s) {
    const Site<T> x = site_of(i, s, disp);
    const int64_t off = nearest_offset<T, P>(x, s);
    if (off < 0) continue;
    for (int64_t c = 0; c < s.C; ++c) {
      const int64_t base = (x.n * s.C + c) * x.plane;
      atomicAdd(gimg + base + off, grad[base + x.at]);
    }
  }
}

template <Pad P, typename T>
void launch_forward(const Shape& s, const T* img, const T* disp, T* out, int mode, bool add,
                    cudaStream_t stream) {
  const int64_t total = s.N * s.D * s.H * s.W;
  const int blocks = blocks_for(total);
  if (mode == 1) {
    forward_nearest<T, P><<<blocks, kThreads, 0, stream>>>(s, img, disp, out);
  } else if (add) {
    forward_linear<T, P, true><<<blocks, kThreads, 0, stream>>>(s, img, disp, out);
  } else {
    forward_linear<T, P, false><<<blocks, kThreads, 0, stream>>>(s, img, disp, out);
  }
}

template <Pad P, typename T>
void launch_backward(const Shape& s, const T* grad, const T* img, const T* disp, T* gimg,
                     T* gdisp, int mode, cudaStream_t stream) {
  const int64_t total = s.N * s.D * s.H * s.W;
  const int blocks = blocks_for(total);
  if (mode == 1) {
    if (gimg) backward_nearest<T, P><<<blocks, kThreads, 0, stream>>>(s, grad, disp, gimg);
  } else {
    backward_linear<T, P><<<blocks, kThreads, 0, stream>>>(s, grad, img, disp, gimg, gdisp);
  }
}

}  // namespace

template <typename T>
cudaError_t warp_forward(const Shape& s, const T* image, const T* disp, T* out, int mode,
                         int pad, bool add_displacement, cudaStream_t stream) {
  if (s.N * s.D * s.H * s.W == 0) return cudaSuccess;
  if (pad == 1) {
    launch_forward<Pad::Border>(s, image, disp, out, mode, add_displacement, stream);
  } else {
    launch_forward<Pad::Zeros>(s, image, disp, out, mode, add_displacement, stream);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t warp_backward(const Shape& s, const T* grad, const T* image, const T* disp,
                          T* grad_image, T* grad_disp, int mode, int pad, cudaStream_t stream) {
  if (s.N * s.D * s.H * s.W == 0) return cudaSuccess;
  if (pad == 1) {
    launch_backward<Pad::Border>(s, grad, image, disp, grad_image, grad_disp, mode, stream);
  } else {
    launch_backward<Pad::Zeros>(s, grad, image, disp, grad_image, grad_disp, mode, stream);
  }
  return cudaGetLastError();
}

template cudaError_t warp_forward<float>(const Shape&, const float*, const float*, float*, int,
                                         int, bool, cudaStream_t);
template cudaError_t warp_forward<double>(const Shape&, const double*, const double*, double*,
                                          int, int, bool, cudaStream_t);
template cudaError_t warp_backward<float>(const Shape&, const float*, const float*,
                                          const float*, float*, float*, int, int, cudaStream_t);
template cudaError_t warp_backward<double>(const Shape&, const double*, const double*,
                                           const double*, double*, double*, int, int,
                                           cudaStream_t);

}  // namespace autoreg::ops::cuda
