// Loading the CUDA plugin (libautoreg_cuda.so) beside this library: see ops.h.
#include <ATen/Context.h>
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>

#include "autoreg/device.h"
#include "autoreg/ops.h"

namespace autoreg::ops {
namespace {

std::string& reason() {
  static std::string r;
  return r;
}

bool load_plugin() {
#ifndef AUTOREG_WITH_CUDA
  reason() = "this build of autoreg has no CUDA support (configure with -DAUTOREG_WITH_CUDA=ON)";
  return false;
#else
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&cuda_available), &self) == 0 || !self.dli_fname) {
    reason() = "cannot locate libautoreg_ops to find the CUDA plugin beside it";
    return false;
  }
  const std::string plugin = (std::filesystem::path(self.dli_fname).parent_path() / "libautoreg_cuda.so").string();
  if (!::dlopen(plugin.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* e = ::dlerror();
    reason() = "cannot load the CUDA plugin: " + std::string(e ? e : plugin);
    return false;
  }
  return true;
#endif
}

}  // namespace

bool cuda_available() {
  static std::once_flag once;
  static bool loaded = false;
  std::call_once(once, [] { loaded = load_plugin(); });
  if (!loaded) return false;
  if (!at::hasCUDA()) {
    reason() = "no CUDA device is available here";
    return false;
  }
  return true;
}

std::string cuda_unavailable_reason() {
  cuda_available();
  return reason();
}

at::Device parse_device(const std::string& name) {
  if (name != "cpu" && name != "cuda") throw std::invalid_argument("device must be cpu or cuda, got '" + name + "'");
  if (name == "cuda" && !cuda_available()) throw std::runtime_error("--device cuda: " + cuda_unavailable_reason());
  return name == "cuda" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
}

}  // namespace autoreg::ops
