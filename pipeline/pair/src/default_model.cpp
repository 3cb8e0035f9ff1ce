#include "autoreg/pair/default_model.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "autoreg/pair/library_folder.h"

namespace autoreg::pipeline {

namespace fs = std::filesystem;

fs::path detail::library_folder() {
  Dl_info info{};
  if (!::dladdr(reinterpret_cast<void*>(&library_folder), &info) || !info.dli_fname) return {};
  std::error_code ec;
  const fs::path library = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path() : library.parent_path();
}

std::string default_model_path() {
  if (const char* env = std::getenv("AUTOREG_DEFAULT_MODEL"); env && *env) return env;
  // The data folder is AUTOREG_LIB_TO_DATA (relative, set by CMake from the install
  // layout) beside this library's, e.g. <prefix>/lib.
  const fs::path folder = detail::library_folder();
  const fs::path installed =
      folder.empty() ? fs::path() : (folder / AUTOREG_LIB_TO_DATA / "default.autoreg").lexically_normal();
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
