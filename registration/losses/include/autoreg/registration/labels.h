// Label maps as the losses and metrics use them: one-hot channels (soft Dice) and the
// label values two maps share.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace autoreg::registration {

// One channel per value of `values`: N×len(values)×D×H×W float, 1 where labels == value.
at::Tensor one_hot(const at::Tensor& labels, const std::vector<int64_t>& values);

// The label values (not 0) present in both label maps, ascending.
std::vector<int64_t> shared_labels(const at::Tensor& a, const at::Tensor& b);

}  // namespace autoreg::registration
