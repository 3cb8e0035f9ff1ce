#include "autoreg/runs/executable.h"

#include <cstdlib>
#include <filesystem>

#include "autoreg/base/errors.h"
#include "autoreg/parallel/process.h"
#include "autoreg/pair/library_folder.h"

namespace autoreg::pipeline {

namespace fs = std::filesystem;

std::string autoreg_executable() {
  if (const char* env = std::getenv("AUTOREG_EXECUTABLE"); env && *env) return env;
  const std::string self = parallel::this_executable();
  if (fs::path(self).filename() == "autoreg") return self;
  // The command is AUTOREG_LIB_TO_BIN (relative, from the install layout) beside this
  // library's folder.
  const fs::path folder = detail::library_folder();
  const fs::path installed = folder.empty() ? fs::path() : (folder / AUTOREG_LIB_TO_BIN / "autoreg").lexically_normal();
  std::error_code ec;
  if (!installed.empty() && fs::exists(installed, ec)) return installed.string();
  const fs::path built = AUTOREG_BUILD_EXECUTABLE;
  if (fs::exists(built, ec)) return built.string();
  throw base::UsageError("no autoreg command at " + installed.string() + " or " + built.string() +
                         " to run the decoupled validation or the ranks (set AUTOREG_EXECUTABLE, or validation inline)");
}

}  // namespace autoreg::pipeline
