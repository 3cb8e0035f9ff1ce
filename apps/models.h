// Where `--model default` is: the model shipped with autoreg.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "exit_codes.h"

namespace autoreg::apps {

// $AUTOREG_DEFAULT_MODEL when set; else share/autoreg/default.autoreg beside the
// installed executable (../share from its bin folder); else the source tree's
// models/default.autoreg (a build tree). A UsageError naming the places looked at when
// none exists.
inline std::string default_model_path() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("AUTOREG_DEFAULT_MODEL"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path installed = exe.parent_path().parent_path() / "share" / "autoreg" / "default.autoreg";
  if (!ec && fs::exists(installed)) return installed.string();
  const fs::path source = AUTOREG_SOURCE_MODELS "/default.autoreg";
  if (fs::exists(source)) return source.string();
  throw UsageError("--model default: no default model at " + installed.string() + " or " + source.string() +
                   " (set AUTOREG_DEFAULT_MODEL)");
}

}  // namespace autoreg::apps
