// The folder the pipeline's libraries (libautoreg_pair.so and libautoreg_runs.so, side
// by side) are in, found from their own location, so that an installed tree that was
// moved still finds what it installed beside them (the default model, the autoreg
// command). Empty when it cannot be told. (Internal to the pipeline.)
#pragma once

#include <filesystem>

namespace autoreg::pipeline::detail {

std::filesystem::path library_folder();

}  // namespace autoreg::pipeline::detail
