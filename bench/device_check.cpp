// autoreg_device_check measure|train [--name value ...] --json FILE
//
// See device_check.h. Each subcommand writes its results as JSON (--json FILE), which
// scripts/device_summary.py turns into the device check's table.
#include "device_check.h"

#include <ATen/Parallel.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "autoreg/base/atomic_file.h"
#include "autoreg/ops.h"

#ifdef AUTOREG_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace autoreg::device {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

double Args::number(const std::string& name, double fallback) const {
  auto it = values.find(name);
  if (it == values.end()) return fallback;
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    throw std::invalid_argument("--" + name + ": not a number: " + it->second);
  }
}

void sync(const at::Device& device) {
#ifdef AUTOREG_WITH_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

void reset_peak(const at::Device& device) {
#ifdef AUTOREG_WITH_CUDA
  if (device.is_cuda()) {
    sync(device);
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
  }
#else
  (void)device;
#endif
}

double peak_mib(const at::Device& device) {
#ifdef AUTOREG_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return double(stats.allocated_bytes[0].peak) / (1024.0 * 1024.0);
  }
#endif
  (void)device;
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

registration::TrainOptions recipe_options(const registration::ModelInfo& recipe, const at::Device& device) {
  const auto note = [&](const std::string& key, const std::string& fallback) {
    auto it = recipe.notes.find(key);
    return it == recipe.notes.end() ? fallback : it->second;
  };
  registration::TrainOptions o;
  o.device = device.is_cuda() ? "cuda" : "cpu";
  o.learning_rate = std::stod(note("learning_rate", "0.001"));
  o.dice_weight = std::stod(note("dice_weight", std::to_string(o.dice_weight)));
  if (recipe.notes.count("objective")) o.objective = registration::ObjectiveWeights::parse(recipe.notes.at("objective"));
  return o;
}

std::string device_name(const at::Device& device) {
#ifdef AUTOREG_WITH_CUDA
  if (device.is_cuda()) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, device.index() < 0 ? 0 : device.index()) == cudaSuccess) return p.name;
  }
#endif
  return device.is_cuda() ? "cuda" : "cpu";
}

}  // namespace autoreg::device

int main(int argc, char** argv) {
  using namespace autoreg::device;
  if (argc < 2 || (std::strcmp(argv[1], "measure") != 0 && std::strcmp(argv[1], "train") != 0)) {
    std::fprintf(stderr, "usage: autoreg_device_check measure|train [--name value ...] --json FILE\n");
    return 1;
  }
  Args args;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "autoreg_device_check: expected --name value, got '%s'\n", a.c_str());
      return 1;
    }
    args.values[a.substr(2)] = argv[++i];
  }
  try {
    if (args.has("threads")) at::set_num_threads(int(args.number("threads", 1)));
    if (args.get("device", "cpu") == "cuda" && !autoreg::ops::cuda_available()) {
      throw std::runtime_error("--device cuda: " + autoreg::ops::cuda_unavailable_reason());
    }
    const nlohmann::json result = std::strcmp(argv[1], "measure") == 0 ? measure(args) : train(args);
    const std::string path = args.get("json");
    if (!path.empty()) {
      autoreg::base::write_file_atomically(path, result.dump(1) + "\n");
    }
    std::printf("%s\n", result.dump(1).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autoreg_device_check %s: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
