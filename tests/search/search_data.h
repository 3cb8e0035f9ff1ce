// Small synthetic data for the search tests: labelled phantoms related by smooth random
// deformations, split into training and validation subjects (pairwise mode), and the
// operation costs of a made-up machine.
#pragma once

#include <ATen/ATen.h>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "autoreg/search/op_cost.h"

namespace autoreg::search::test {

// Bright and dark blobs in a dim ball on a ramp, n³, with a 3-label map of them.
inline registration::Subject phantom_subject(int64_t n, int index) {
  const at::Tensor r = at::linspace(-1, 1, n);
  const at::Tensor z = r.view({n, 1, 1}), y = r.view({1, n, 1}), x = r.view({1, 1, n});
  at::Tensor img = 0.3 * ((z * z + y * y + x * x) < 0.7).to(at::kFloat);
  const double blobs[3][4] = {{0.3, 0.2, -0.2, 0.7}, {-0.3, 0.1, 0.3, 0.5}, {0.0, -0.35, 0.0, 0.9}};
  for (const auto& b : blobs) img = img + b[3] * at::exp(-((z - b[0]).pow(2) + (y - b[1]).pow(2) + (x - b[2]).pow(2)) / 0.04);
  // A ramp everywhere: local NCC's curvature is huge where an image is flat (its variance
  // vanishes), which no finite difference can follow.
  img = (img + 0.1 * (x + y + z + 3) / 6 + 0.05 * at::sin(4 * (x - 0.5 * y))).clamp(0, 1).view({1, 1, n, n, n});
  at::manual_seed(100 + index);
  const at::Tensor phi = registration::random_smooth_field({n, n, n}, 1.0, 3);
  const at::Tensor image = ops::warp(img, phi, ops::Interpolation::Linear, ops::Padding::Border);
  const at::Tensor labels = at::clamp((image * 4).floor(), 0, 3).to(at::kInt);
  return {"s" + std::to_string(index), image, labels};
}

inline registration::TrainingSet phantom_set(int64_t n, int train, int validation) {
  registration::TrainingSet set;
  for (int i = 0; i < train; ++i) set.train.push_back(phantom_subject(n, i));
  for (int i = 0; i < validation; ++i) set.validation.push_back(phantom_subject(n, 50 + i));
  return set;
}

inline registration::ModelInfo phantom_info(int64_t n) {
  registration::ModelInfo info;
  info.grid = {n, n, n};
  info.spacing = {2, 2, 2};
  info.network.integration_steps = 3;
  return info;
}

// Costs that grow with the operation's index and the edge's, 1..96 ms, and 4 ms besides.
inline OpCosts made_up_costs(int64_t n) {
  OpCosts c;
  c.grid = {n, n, n};
  for (int e = 0; e < kEdges; ++e) {
    for (int k = 0; k < kCandidates; ++k) c.ms[e][k] = 1.0 + k + 8.0 * e;
  }
  c.overhead_ms = 4;
  return c;
}

}  // namespace autoreg::search::test
