// CPU kernels of autoreg::warp, autoreg::_warp_backward and autoreg::compose.
//
// Work is split into rows (n, d, h) over at::parallel_for. Each row is processed in
// blocks of kBlock voxels in two phases: first the 8 neighbour offsets and weights of
// every voxel of the block (the interpolation math of interp.h), then, per channel,
// the gathers. Both phases are plain loops over the block that the compiler turns into
// SIMD code (gathers on AVX2), and the neighbour setup is shared by all channels.
// The backward pass scatters into the image gradient; threads other than the first
// scatter into private buffers that are summed afterwards, so results are
// deterministic for a given thread count.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <vector>

#include "../interp.h"
#include "../validate.h"

namespace autoreg::ops::detail {
namespace {

constexpr int32_t kBlock = 64;  // voxels whose neighbours are set up together
// Channels read together per voxel, sharing one load of its neighbour offsets and
// weights. Measured at 1×16×80×96×112, one thread: one channel per pass 411 ms, 4 per
// pass 190-238 ms, 16 per pass 195 ms; groups bound how many planes are read at once.
constexpr int64_t kChannelGroup = 16;

struct Grid {
  int64_t N, C, D, H, W;
  int64_t plane() const { return D * H * W; }
};

Grid grid_of(const at::Tensor& image) {
  return {image.size(0), image.size(1), image.size(2), image.size(3), image.size(4)};
}

// Neighbour offsets and weights of one block for linear sampling. Corner k = 4a+2b+c
// is the neighbour (d_a, h_b, w_c); its weight is the product of the axis weights
// lo/hi (zero for a neighbour outside the volume). With Grad, dlo/dhi hold the
// derivatives of the axis weights with respect to the sample position.
template <typename T, bool Grad>
struct LinearBlock {
  alignas(64) int32_t off[8][kBlock];
  alignas(64) T w[Grad ? 1 : 8][kBlock];          // corner weights (forward)
  alignas(64) T lo[Grad ? 3 : 1][kBlock];         // axis weights (backward)
  alignas(64) T hi[Grad ? 3 : 1][kBlock];
  alignas(64) T dlo[Grad ? 3 : 1][kBlock];
  alignas(64) T dhi[Grad ? 3 : 1][kBlock];
};

template <typename T, Pad P, bool Grad>
void setup_linear(const Grid& g, const T* ud, const T* uh, const T* uw, int64_t d, int64_t h,
                  int64_t w_begin, int32_t len, LinearBlock<T, Grad>& b) {
  const int32_t D = g.D, H = g.H, W = g.W;
  const int32_t HW = H * W;
  // Positions in T from 32-bit integers only: AVX2 cannot convert 64-bit ones.
  const T pd = static_cast<T>(d), ph = static_cast<T>(h), pw = static_cast<T>(w_begin);
#pragma omp simd
  for (int32_t j = 0; j < len; ++j) {
    const LinearAxis<T> ad = linear_axis<T, P>(pd + ud[j], D);
    const LinearAxis<T> ah = linear_axis<T, P>(ph + uh[j], H);
    const LinearAxis<T> aw = linear_axis<T, P>(pw + static_cast<T>(j) + uw[j], W);
    const int32_t o00 = ad.i0 * HW + ah.i0 * W, o01 = ad.i0 * HW + ah.i1 * W;
    const int32_t o10 = ad.i1 * HW + ah.i0 * W, o11 = ad.i1 * HW + ah.i1 * W;
    b.off[0][j] = o00 + aw.i0;  b.off[1][j] = o00 + aw.i1;
    b.off[2][j] = o01 + aw.i0;  b.off[3][j] = o01 + aw.i1;
    b.off[4][j] = o10 + aw.i0;  b.off[5][j] = o10 + aw.i1;
    b.off[6][j] = o11 + aw.i0;  b.off[7][j] = o11 + aw.i1;
    if constexpr (Grad) {
      b.lo[0][j] = ad.w0;  b.hi[0][j] = ad.w1;
      b.lo[1][j] = ah.w0;  b.hi[1][j] = ah.w1;
      b.lo[2][j] = aw.w0;  b.hi[2][j] = aw.w1;
      b.dlo[0][j] = -ad.m0 * ad.dpos;  b.dhi[0][j] = ad.m1 * ad.dpos;
      b.dlo[1][j] = -ah.m0 * ah.dpos;  b.dhi[1][j] = ah.m1 * ah.dpos;
      b.dlo[2][j] = -aw.m0 * aw.dpos;  b.dhi[2][j] = aw.m1 * aw.dpos;
    } else {
      const T w00 = ad.w0 * ah.w0, w01 = ad.w0 * ah.w1, w10 = ad.w1 * ah.w0, w11 = ad.w1 * ah.w1;
      b.w[0][j] = w00 * aw.w0;  b.w[1][j] = w00 * aw.w1;
      b.w[2][j] = w01 * aw.w0;  b.w[3][j] = w01 * aw.w1;
      b.w[4][j] = w10 * aw.w0;  b.w[5][j] = w10 * aw.w1;
      b.w[6][j] = w11 * aw.w0;  b.w[7][j] = w11 * aw.w1;
    }
  }
}

// Nearest neighbour of each voxel of a block and whether it lies inside the volume.
template <typename T>
struct NearestBlock {
  alignas(64) int32_t off[kBlock];
  alignas(64) T inside[kBlock];
};

template <typename T, Pad P>
void setup_nearest(const Grid& g, const T* ud, const T* uh, const T* uw, int64_t d, int64_t h,
                   int64_t w_begin, int32_t len, NearestBlock<T>& b) {
  const int32_t D = g.D, H = g.H, W = g.W;
  const T pd = static_cast<T>(d), ph = static_cast<T>(h), pw = static_cast<T>(w_begin);
  for (int32_t j = 0; j < len; ++j) {
    T md, mh, mw;
    const int32_t id = nearest_axis<T, P>(pd + ud[j], D, md);
    const int32_t ih = nearest_axis<T, P>(ph + uh[j], H, mh);
    const int32_t iw = nearest_axis<T, P>(pw + static_cast<T>(j) + uw[j], W, mw);
    b.off[j] = (id * H + ih) * W + iw;
    b.inside[j] = md * mh * mw;
  }
}

// Runs body(n, d, h, tid) for every row of the grid, in parallel.
template <typename F>
void for_each_row(const Grid& g, F&& body) {
  const int64_t rows = g.N * g.D * g.H;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.W * g.C));
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    const int tid = at::get_thread_num();
    for (int64_t r = begin; r < end; ++r) {
      body(r / (g.D * g.H), (r / g.H) % g.D, r % g.H, tid);
    }
  });
}

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

// Per-thread destinations of the image gradient's scatter: thread 0 writes into the
// result, the others into zero-initialised buffers allocated on first use.
template <typename T>
class ScatterTargets {
 public:
  explicit ScatterTargets(at::Tensor result)
      : result_(std::move(result)), extra_(std::max(1, at::get_num_threads())) {}
  T* get(int tid) {
    if (tid == 0) return result_.data_ptr<T>();
    at::Tensor& t = extra_.at(tid);
    if (!t.defined()) t = at::zeros(result_.sizes(), result_.options());
    return t.data_ptr<T>();
  }
  at::Tensor reduce() {
    for (const at::Tensor& t : extra_) {
      if (t.defined()) result_.add_(t);
    }
    return result_;
  }

 private:
  at::Tensor result_;
  std::vector<at::Tensor> extra_;
};

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
          int32_t o[8];
          for (int k = 0; k < 8; ++k) o[k] = b.off[k][j];
          const T ld = b.lo[0][j], hd = b.hi[0][j], lh = b.lo[1][j], hh = b.hi[1][j];
          const T lw = b.lo[2][j], hw = b.hi[2][j];
          const T dld = b.dlo[0][j], dhd = b.dhi[0][j], dlh = b.dlo[1][j], dhh = b.dhi[1][j];
          const T dlw = b.dlo[2][j], dhw = b.dhi[2][j];
          T sd = 0, sh = 0, sw = 0;
          const T* src = img + (n * g.C + c0) * plane;
          const T* go = grad + (n * g.C + c0) * plane + row + w0 + j;
          T* gi = gimg_n ? gimg_n + c0 * plane : nullptr;
          for (int64_t c = c0; c < c1; ++c, src += plane, go += plane) {
            const T gv = *go;
            if (gdisp) {
              T r[4], q[4];  // along w: value r and derivative q for each (d_a, h_b)
              for (int ab = 0; ab < 4; ++ab) {
                const T v0 = src[o[2 * ab]], v1 = src[o[2 * ab + 1]];
                r[ab] = lw * v0 + hw * v1;
                q[ab] = dlw * v0 + dhw * v1;
              }
              const T s0 = lh * r[0] + hh * r[1], s1 = lh * r[2] + hh * r[3];
              const T dh0 = dlh * r[0] + dhh * r[1], dh1 = dlh * r[2] + dhh * r[3];
              const T tw0 = lh * q[0] + hh * q[1], tw1 = lh * q[2] + hh * q[3];
              sd += gv * (dld * s0 + dhd * s1);
              sh += gv * (ld * dh0 + hd * dh1);
              sw += gv * (ld * tw0 + hd * tw1);
            }
            if (gi) {
              const T a0 = gv * ld, a1 = gv * hd;
              const T b00 = a0 * lh, b01 = a0 * hh, b10 = a1 * lh, b11 = a1 * hh;
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

template <typename F>
void with_padding(Pad pad, F&& f) {
  if (pad == Pad::Border) {
    f(std::integral_constant<Pad, Pad::Border>{});
  } else {
    f(std::integral_constant<Pad, Pad::Zeros>{});
  }
}

at::Tensor warp_cpu(const at::Tensor& image_in, const at::Tensor& displacement_in,
                    c10::string_view interpolation, c10::string_view padding) {
  const WarpSpec spec =
      check_warp_args("autoreg::warp", image_in, displacement_in, interpolation, padding);
  const at::Tensor image = image_in.contiguous();
  const at::Tensor disp = displacement_in.contiguous();
  at::Tensor out = at::empty(image.sizes(), image.options());
  if (out.numel() == 0) return out;
  const Grid g = grid_of(image);
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "autoreg::warp", [&] {
    with_padding(spec.pad, [&](auto pad) {
      constexpr Pad P = decltype(pad)::value;
      if (spec.mode == Mode::Linear) {
        forward_linear<scalar_t, P, false>(g, image.data_ptr<scalar_t>(),
                                           disp.data_ptr<scalar_t>(), out.data_ptr<scalar_t>());
      } else {
        forward_nearest<scalar_t, P>(g, image.data_ptr<scalar_t>(), disp.data_ptr<scalar_t>(),
                                     out.data_ptr<scalar_t>());
      }
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> warp_backward_cpu(const at::Tensor& grad_in,
                                                     const at::Tensor& image_in,
                                                     const at::Tensor& displacement_in,
                                                     c10::string_view interpolation,
                                                     c10::string_view padding,
                                                     std::array<bool, 2> output_mask) {
  const char* op = "autoreg::_warp_backward";
  const WarpSpec spec = check_warp_args(op, image_in, displacement_in, interpolation, padding);
  check_warp_grad(op, grad_in, image_in, displacement_in);
  const at::Tensor grad = grad_in.contiguous();
  const at::Tensor image = image_in.contiguous();
  const at::Tensor disp = displacement_in.contiguous();
  at::Tensor grad_image, grad_disp;
  const bool want_image = output_mask[0];
  // Nearest sampling is piecewise constant: its displacement gradient is zero.
  const bool want_disp = output_mask[1];
  if (want_image) grad_image = at::zeros(image.sizes(), image.options());
  if (want_disp) {
    grad_disp = spec.mode == Mode::Linear ? at::empty(disp.sizes(), disp.options())
                                          : at::zeros(disp.sizes(), disp.options());
  }
  if (grad.numel() == 0 || image.numel() == 0) {
    if (want_disp) grad_disp.zero_();
    return {grad_image, grad_disp};
  }
  const Grid g = grid_of(image);
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "autoreg::_warp_backward", [&] {
    with_padding(spec.pad, [&](auto pad) {
      constexpr Pad P = decltype(pad)::value;
      std::optional<ScatterTargets<scalar_t>> targets;
      if (want_image) targets.emplace(grad_image);
      if (spec.mode == Mode::Linear) {
        if (want_image || want_disp) {
          backward_linear<scalar_t, P>(g, grad.data_ptr<scalar_t>(), image.data_ptr<scalar_t>(),
                                       disp.data_ptr<scalar_t>(), targets ? &*targets : nullptr,
                                       want_disp ? grad_disp.data_ptr<scalar_t>() : nullptr);
        }
      } else if (want_image) {
        backward_nearest<scalar_t, P>(g, grad.data_ptr<scalar_t>(), disp.data_ptr<scalar_t>(),
                                      *targets);
      }
      if (targets) grad_image = targets->reduce();
    });
  });
  return {grad_image, grad_disp};
}

at::Tensor compose_cpu(const at::Tensor& u_in, const at::Tensor& v_in) {
  check_compose_args("autoreg::compose", u_in, v_in);
  const at::Tensor u = u_in.contiguous();
  const at::Tensor v = v_in.contiguous();
  at::Tensor out = at::empty(v.sizes(), v.options());
  if (out.numel() == 0) return out;
  const Grid g = grid_of(u);
  AT_DISPATCH_FLOATING_TYPES(u.scalar_type(), "autoreg::compose", [&] {
    forward_linear<scalar_t, Pad::Border, true>(g, u.data_ptr<scalar_t>(), v.data_ptr<scalar_t>(),
                                                out.data_ptr<scalar_t>());
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, CPU, m) {
  m.impl("warp", &warp_cpu);
  m.impl("_warp_backward", &warp_backward_cpu);
  m.impl("compose", &compose_cpu);
}

}  // namespace autoreg::ops::detail
