// Building blocks of the CPU warp kernels (warp_kernel.cpp): the grid, the per-block
// neighbour set-up (vectorised: the interpolation math of interp.h for kBlock voxels at
// a time), the parallel loop over rows and the per-thread scatter targets.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../interp.h"

namespace autoreg::ops::detail {

constexpr int32_t kBlock = 64;  // voxels whose neighbours are set up together
// Channels read together per voxel, sharing one load of its neighbour offsets and
// weights. Measured at 1×16×80×96×112, one thread: one channel per pass 411 ms, 4 per
// pass 190-238 ms, 16 per pass 195 ms; groups bound how many planes are read at once.
constexpr int64_t kChannelGroup = 16;

struct Grid {
  int64_t N, C, D, H, W;
  int64_t plane() const { return D * H * W; }
};

inline Grid grid_of(const at::Tensor& image) {
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

// One voxel of a LinearBlock<T, true>: its neighbours' offsets, its axis weights (lo, hi)
// and their derivatives (dlo, dhi) along d, h, w, loaded once for all its channels.
template <typename T>
struct VoxelWeights {
  int32_t off[8];
  T lo[3], hi[3], dlo[3], dhi[3];
  VoxelWeights(const LinearBlock<T, true>& b, int32_t j) {
    for (int k = 0; k < 8; ++k) off[k] = b.off[k][j];
    for (int a = 0; a < 3; ++a) {
      lo[a] = b.lo[a][j];
      hi[a] = b.hi[a][j];
      dlo[a] = b.dlo[a][j];
      dhi[a] = b.dhi[a][j];
    }
  }
};

// The trilinear form of one channel at one voxel: its value and its derivatives with
// respect to the sample position along d, h and w, from the 8 neighbours read once.
template <typename T>
struct Trilinear {
  T value, d, h, w;
};

template <typename T>
inline Trilinear<T> trilinear(const T* src, const VoxelWeights<T>& v) {
  T r[4], q[4];  // along w: value r and derivative q for each (d_a, h_b)
  for (int ab = 0; ab < 4; ++ab) {
    const T v0 = src[v.off[2 * ab]], v1 = src[v.off[2 * ab + 1]];
    r[ab] = v.lo[2] * v0 + v.hi[2] * v1;
    q[ab] = v.dlo[2] * v0 + v.dhi[2] * v1;
  }
  const T s0 = v.lo[1] * r[0] + v.hi[1] * r[1], s1 = v.lo[1] * r[2] + v.hi[1] * r[3];
  const T dh0 = v.dlo[1] * r[0] + v.dhi[1] * r[1], dh1 = v.dlo[1] * r[2] + v.dhi[1] * r[3];
  const T tw0 = v.lo[1] * q[0] + v.hi[1] * q[1], tw1 = v.lo[1] * q[2] + v.hi[1] * q[3];
  return {v.lo[0] * s0 + v.hi[0] * s1, v.dlo[0] * s0 + v.dhi[0] * s1, v.lo[0] * dh0 + v.hi[0] * dh1,
          v.lo[0] * tw0 + v.hi[0] * tw1};
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

// Calls f with the padding as a compile-time constant (std::integral_constant<Pad, P>).
template <typename F>
void with_padding(Pad pad, F&& f) {
  if (pad == Pad::Border) {
    f(std::integral_constant<Pad, Pad::Border>{});
  } else {
    f(std::integral_constant<Pad, Pad::Zeros>{});
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

}  // namespace autoreg::ops::detail
