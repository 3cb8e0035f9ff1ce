// autoreg_device_check: what scripts/device-check.sh runs on a GPU machine (and, with
// --rehearse, here on the CPU at small sizes): the measurements of the CUDA paths
// against torch's own (device_measure.cpp) and the default model's recipe trained for a
// fixed time on a packed training set (device_train.cpp). No ITK, no Google Benchmark:
// it builds wherever LibTorch does.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"

#include <map>
#include <string>

namespace autoreg::device {

// --name value pairs.
struct Args {
  std::map<std::string, std::string> values;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  double number(const std::string& name, double fallback) const;
  bool has(const std::string& name) const { return values.count(name) > 0; }
};

// Waits for the device's queued work (no-op on the CPU).
void sync(const at::Device& device);
// Starts a peak-memory window; the peak since then in MiB: the CUDA caching allocator's
// allocated bytes on a GPU, the process's peak resident memory on the CPU (which only
// grows: the largest so far).
void reset_peak(const at::Device& device);
double peak_mib(const at::Device& device);
// The device's name ("cpu" or the GPU's).
std::string device_name(const at::Device& device);

// The training options of a model's recipe, from its notes (learning rate, Dice weight,
// λ; the trainer's defaults where a note is missing, the learning rate 1e-3), on `device`.
registration::TrainOptions recipe_options(const registration::ModelInfo& recipe, const at::Device& device);

// measure: --device cpu|cuda --size DxHxW [--set FILE] [--model FILE] [--repeats N]
nlohmann::json measure(const Args& args);
// train: --set FILE --model FILE (the recipe: network, λ, learning rate) --minutes M
//        --out MODEL [--log FILE] [--device cuda] [--seed S]
nlohmann::json train(const Args& args);

}  // namespace autoreg::device
