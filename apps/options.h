// Option parsing shared by the subcommands.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "autoreg/pair/default_model.h"
#include "autoreg/pair/option_values.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/pair/qc_picture.h"
#include "autoreg/pair/register_job.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/registration/model_file.h"
#include "exit_codes.h"

namespace autoreg::apps {

using pipeline::parse_int_list;

using pipeline::refuse_overwrite;

// The pipeline's options for registration settings (pipeline::pair_options): settings
// that contradict each other are a UsageError, and so is "default" where no default model
// is installed; a model file that cannot be read is bad input.
inline pipeline::PairOptions pair_options_of(const pipeline::RegistrationSettings& settings) {
  try {
    return pipeline::pair_options(settings);
  } catch (const pipeline::NoDefaultModel& e) {
    throw UsageError(std::string("--model default: ") + e.what());
  }
}

// Whether a path names a PNG file (--qc pictures).
inline bool ends_with_png(const std::string& path) {
  return path.size() > 4 && (path.compare(path.size() - 4, 4, ".png") == 0 || path.compare(path.size() - 4, 4, ".PNG") == 0);
}

using pipeline::file_stem;
using pipeline::make_output_folder;
using pipeline::write_qc_picture;

}  // namespace autoreg::apps
