#include "autoreg/pipeline/default_model.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

namespace autoreg::pipeline {

namespace fs = std::filesystem;

std::string default_model_path() {
  if (const char* env = std::getenv("AUTOREG_DEFAULT_MODEL"); env && *env) return env;
  // This library's file, e.g. <prefix>/lib/libautoreg_pipeline.so; its data folder is
  // AUTOREG_LIB_TO_DATA (relative, set by CMake from the install layout) beside it.
  Dl_info info{};
  fs::path installed;
  if (::dladdr(reinterpret_cast<void*>(&default_model_path), &info) && info.dli_fname) {
    std::error_code ec;
    const fs::path library = fs::canonical(info.dli_fname, ec);
    if (!ec) installed = (library.parent_path() / AUTOREG_LIB_TO_DATA / "default.autoreg").lexically_normal();
  }
  std::error_code ec;
  if (!installed.empty() && fs::exists(installed, ec)) return installed.string();
  const fs::path source = AUTOREG_SOURCE_MODELS "/default.autoreg";
  if (fs::exists(source, ec)) return source.string();
  throw NoDefaultModel("no default model at " + installed.string() + " or " + source.string() +
                       " (set AUTOREG_DEFAULT_MODEL)");
}

std::string resolve_model_name(const std::string& name) {
  return name == "default" ? default_model_path() : name;
}

}  // namespace autoreg::pipeline
