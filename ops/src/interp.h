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
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

AUTOREG_HD int32_t clampi(int32_t i, int32_t lo, int32_t hi) {
  i = i < lo ? lo : i;
  return i > hi ? hi : i;
}

// 1 if 0 <= i < size, else 0 (no short-circuit: keeps loops free of branches).
template <typename T>
AUTOREG_HD T inside(int32_t i, int32_t size) {
  return static_cast<T>(static_cast<int>(i >= 0) & static_cast<int>(i < size));
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
  LinearAxis<T> a;
  const T last = static_cast<T>(size - 1);
  if constexpr (P == Pad::Border) {
    a.dpos = static_cast<T>(static_cast<int>(p > T(0)) & static_cast<int>(p < last));
    p = clampv(p, T(0), last);
  } else {
    a.dpos = T(1);
    // Far outside, every neighbour is outside: clamping there changes nothing but
    // keeps the integer conversion below defined for any finite input.
    p = clampv(p, T(-2), last + T(2));
  }
  // floor by truncation and correction: vectorises where floor() does not (GCC keeps
  // floorf scalar unless -fno-trapping-math); p is clamped, so the conversion is safe.
  int32_t i0 = static_cast<int32_t>(p);
  i0 -= static_cast<int32_t>(p < static_cast<T>(i0));
  const T t = p - static_cast<T>(i0);
  a.m0 = inside<T>(i0, size);
  a.m1 = inside<T>(i0 + 1, size);
  a.w0 = (T(1) - t) * a.m0;
  a.w1 = t * a.m1;
  a.i0 = clampi(i0, 0, size - 1);
  a.i1 = clampi(i0 + 1, 0, size - 1);
  return a;
}

// Nearest neighbour along one axis: the clamped index and whether it is inside.
template <typename T, Pad P>
AUTOREG_HD int32_t nearest_axis(T p, int32_t size, T& in) {
  using std::nearbyint;
  const T last = static_cast<T>(size - 1);
  if constexpr (P == Pad::Border) {
    p = clampv(p, T(0), last);
  } else {
    p = clampv(p, T(-2), last + T(2));
  }
  const int32_t i = static_cast<int32_t>(nearbyint(p));
  in = inside<T>(i, size);
  return clampi(i, 0, size - 1);
}

}  // namespace autoreg::ops::detail
