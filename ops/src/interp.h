// Interpolation weights and bounds shared by the CPU and CUDA warp kernels.
//
// The one place that says what sampling at a continuous voxel position means:
//   linear:  trilinear between the 8 voxels around the position; a neighbour outside
//            the volume contributes zero (padding zeros), or the position is first
//            clamped into [0, size-1] (padding border, as torch's grid_sample with
//            align_corners=True, whose gradient is zero where the clamp is active).
//   nearest: the voxel at round-half-to-even(position), as grid_sample; outside the
//            volume zero (padding zeros) or the clamped voxel (padding border).
// Plain functions of scalars, usable from host and device code, branch-free so that
// the CPU loops vectorise.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define AUTOREG_HD __host__ __device__ __forceinline__
#else
#define AUTOREG_HD inline
#endif

namespace autoreg::ops::detail {

enum class Mode : int { Linear = 0, Nearest = 1 };
enum class Pad : int { Zeros = 0, Border = 1 };

template <typename T>
AUTOREG_HD T clampv(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// One axis of a linear sample: the two neighbours (indices clamped into the volume so
// that they can always be read), their weights with out-of-volume neighbours zeroed,
// and dpos, the derivative of the clamped position with respect to the input position
// (0 where border padding clamps, 1 elsewhere).
template <typename T>
struct LinearAxis {
  int32_t i0, i1;
  T w0, w1;   // weights, zero for a neighbour outside the volume
  T m0, m1;   // 1 if the neighbour is inside the volume, else 0
  T dpos;
};

template <typename T, Pad P>
AUTOREG_HD LinearAxis<T> linear_axis(T p, int32_t size) {
  using std::floor;
  LinearAxis<T> a;
  const T last = static_cast<T>(size - 1);
  if (P == Pad::Border) {
    a.dpos = (p > T(0) && p < last) ? T(1) : T(0);
    p = clampv(p, T(0), last);
  } else {
    a.dpos = T(1);
    // Far outside, every neighbour is outside: clamping there changes nothing but
    // keeps the integer conversion below defined for any finite input.
    p = clampv(p, T(-2), last + T(2));
  }
  const T f = floor(p);
  const int32_t i0 = static_cast<int32_t>(f);
  const int32_t i1 = i0 + 1;
  const T t = p - f;
  a.m0 = (i0 >= 0 && i0 < size) ? T(1) : T(0);
  a.m1 = (i1 >= 0 && i1 < size) ? T(1) : T(0);
  a.w0 = (T(1) - t) * a.m0;
  a.w1 = t * a.m1;
  a.i0 = i0 < 0 ? 0 : (i0 > size - 1 ? size - 1 : i0);
  a.i1 = i1 < 0 ? 0 : (i1 > size - 1 ? size - 1 : i1);
  return a;
}

// Nearest neighbour along one axis: the clamped index and whether it is inside.
template <typename T, Pad P>
AUTOREG_HD int32_t nearest_axis(T p, int32_t size, T& inside) {
  using std::nearbyint;
  const T last = static_cast<T>(size - 1);
  p = P == Pad::Border ? clampv(p, T(0), last) : clampv(p, T(-2), last + T(2));
  const int32_t i = static_cast<int32_t>(nearbyint(p));
  inside = (i >= 0 && i < size) ? T(1) : T(0);
  return i < 0 ? 0 : (i > size - 1 ? size - 1 : i);
}

}  // namespace autoreg::ops::detail
