#include "autoreg/pipeline/executable.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "autoreg/base/errors.h"
#include "autoreg/parallel/process.h"

namespace autoreg::pipeline {

namespace fs = std::filesystem;

std::string autoreg_executable() {
  if (const char* env = std::getenv("AUTOREG_EXECUTABLE"); env && *env) return env;
  const std::string self = parallel::this_executable();
  if (fs::path(self).filename() == "autoreg") return self;
  std::error_code ec;
  // This library's file, <prefix>/lib/libautoreg_pipeline.so: the command is
  // AUTOREG_LIB_TO_BIN (relative, from the install layout) beside it.
  Dl_info info{};
  fs::path installed;
  if (::dladdr(reinterpret_cast<void*>(&autoreg_executable), &info) && info.dli_fname) {
    const fs::path library = fs::canonical(info.dli_fname, ec);
    if (!ec) installed = (library.parent_path() / AUTOREG_LIB_TO_BIN / "autoreg").lexically_normal();
  }
  if (!installed.empty() && fs::exists(installed, ec)) return installed.string();
  const fs::path built = AUTOREG_BUILD_EXECUTABLE;
  if (fs::exists(built, ec)) return built.string();
  throw base::UsageError("no autoreg command at " + installed.string() + " or " + built.string() +
                         " to run the decoupled validation or the ranks (set AUTOREG_EXECUTABLE, or validation inline)");
}

}  // namespace autoreg::pipeline
