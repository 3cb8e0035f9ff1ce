// The folder this library's file (libautoreg_pipeline.so) is in, found from its own
// location, so that an installed tree that was moved still finds what it installed
// beside it (the default model, the autoreg command). Empty when it cannot be told.
#pragma once

#include <filesystem>

namespace autoreg::pipeline::detail {

std::filesystem::path library_folder();

}  // namespace autoreg::pipeline::detail
