// A short tour of autoreg's operators on a synthetic volume, and the README's main job
// until `autoreg register` exists:
//   1. a smooth random velocity field is integrated (scaling and squaring) into a
//      diffeomorphic displacement, and its inverse from the negated velocity;
//   2. a synthetic "brain" (nested ellipsoids with labels) is warped by it, intensities
//      trilinearly and labels by nearest neighbour;
//   3. warping back with the inverse recovers the original: Dice of the labels and the
//      intensity error are printed, with the Jacobian determinant's range and timings.
//
//   build/bin/autoreg_ops_demo [--size N] [--threads T]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "autoreg/ops.h"
#include "autoreg/registration/metrics.h"

namespace {

using autoreg::ops::Interpolation;
using autoreg::ops::Padding;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Nested ellipsoids: label 1 (outer shell), 2, 3 (core); intensity rises inwards.
at::Tensor phantom_labels(int64_t n) {
  const at::Tensor r = at::linspace(-1, 1, n, at::kFloat);
  const at::Tensor rho = at::sqrt(at::pow(r.view({n, 1, 1}) / 0.8, 2) +
                                  at::pow(r.view({1, n, 1}) / 0.9, 2) +
                                  at::pow(r.view({1, 1, n}) / 0.7, 2));
  return ((rho < 1).to(at::kFloat) + (rho < 0.7).to(at::kFloat) + (rho < 0.35).to(at::kFloat))
      .view({1, 1, n, n, n});
}

}  // namespace

int main(int argc, char** argv) {
  int64_t size = 96;
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--size" && i + 1 < argc) {
      size = std::atol(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--size N] [--threads T]\n", argv[0]);
      return a == "--help" ? 0 : 1;
    }
  }
  if (size < 8 || size > 512) {
    std::fprintf(stderr, "autoreg_ops_demo: --size must be in [8, 512], got %ld\n", long(size));
    return 1;
  }
  at::set_num_threads(threads);
  at::manual_seed(0);
  c10::AutoGradMode no_grad(false);
  std::printf("autoreg operator demo: %ld^3 voxels, %d threads\n", long(size), threads);

  const at::Tensor labels = phantom_labels(size);
  const at::Tensor image = labels * 0.3 + at::rand(labels.sizes()) * 0.05;
  // A smooth velocity of up to size/12 voxels: coarse noise upsampled.
  const at::Tensor coarse = (at::rand({1, 3, 5, 5, 5}) * 2 - 1) * (double(size) / 12);
  const at::Tensor velocity = at::upsample_trilinear3d(coarse, {size, size, size}, true);

  auto t0 = std::chrono::steady_clock::now();
  const at::Tensor forward = autoreg::ops::integrate(velocity, 7);
  const at::Tensor inverse = autoreg::ops::integrate(-velocity, 7);
  const double t_integrate = seconds_since(t0) / 2;
  const at::Tensor det = autoreg::ops::jacobian_determinant(forward);
  std::printf("integrate (7 steps):   %.3f s per field; max |u| %.2f voxels; "
              "Jacobian determinant in [%.3f, %.3f]\n",
              t_integrate, forward.abs().max().item<double>(), det.min().item<double>(),
              det.max().item<double>());

  t0 = std::chrono::steady_clock::now();
  const at::Tensor warped = autoreg::ops::warp(image, forward, Interpolation::Linear, Padding::Zeros);
  const double t_warp = seconds_since(t0);
  const at::Tensor warped_labels =
      autoreg::ops::warp(labels, forward, Interpolation::Nearest, Padding::Zeros);
  std::printf("warp (trilinear):      %.3f s; labels moved: Dice(original, warped) = %.3f\n",
              t_warp, autoreg::registration::dice(labels, warped_labels, 3));

  const at::Tensor back = autoreg::ops::warp(warped, inverse, Interpolation::Linear, Padding::Zeros);
  const at::Tensor back_labels =
      autoreg::ops::warp(warped_labels, inverse, Interpolation::Nearest, Padding::Zeros);
  const at::Tensor residual = autoreg::ops::compose(forward, inverse);
  const int64_t m = size / 8;  // away from the faces, where zeros padding loses content
  auto inner = [&](const at::Tensor& t) {
    return t.narrow(2, m, size - 2 * m).narrow(3, m, size - 2 * m).narrow(4, m, size - 2 * m);
  };
  std::printf("warp back by inverse:  mean |image - back| = %.4f (image range 0..1); "
              "mean |compose(u, u^-1)| = %.3f voxels\n",
              inner(image - back).abs().mean().item<double>(),
              inner(residual).abs().mean().item<double>());
  for (double l : {1.0, 2.0, 3.0}) {
    std::printf("  label %.0f: Dice(original, warped then restored) = %.3f\n", l,
                autoreg::registration::dice(labels, back_labels, int64_t(l)));
  }
  return 0;
}
