// What `autoreg pack` does, as a library job: a manifest's train, val and atlas rows
// preprocessed as `train` does (aligned to the reference, sampled onto the model grid,
// normalised; cached) and written as one training set file
// (registration/training_set_file.h) that needs neither ITK nor the source volumes to
// read: what a GPU machine without ITK trains and searches on. Test rows are left out.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "autoreg/base/schema.h"

namespace autoreg::pipeline {

struct PackJob {
  std::string manifest;                       // CSV: image, labels, split
  std::string out;                            // the training set file
  std::optional<std::array<int64_t, 3>> grid;  // the model grid DxHxW; unset: the reference's foreground box + 8 mm
  double spacing = 2.0;                        // mm
  bool unet = false;                           // for the U-Net: grid sizes multiples of 16, not 4
  std::string cache;                           // preprocessed volumes; "": <out>.cache
  double max_unreadable = 0;                   // share of rows that may be unreadable (reported, skipped)
  std::function<void(const std::string&)> progress;  // each preprocessing line
};

// base::UsageError naming the option for a setting out of range.
void validate(const PackJob& job);

// The rows of the job's settings (base/schema.h): `pack`'s options and the keywords of
// Python's autoreg.pack.
const base::Schema<PackJob>& pack_schema();

struct PackResult {
  size_t train = 0, validation = 0;
  bool atlas = false;
  std::array<int64_t, 3> grid{};
  double spacing = 0;
  uintmax_t bytes = 0;  // of the file written
};

// Writes the file (atomically), after validate(); io::IoError naming the manifest or a
// volume for bad input.
PackResult pack(const PackJob& job);

}  // namespace autoreg::pipeline
