// A training set from a manifest (io/manifest.h): every subject aligned to the
// reference (the atlas, or in pairwise mode the first training image) by the affine
// stage of `register`, sampled once onto the model frame of the reference
// (pipeline/frame.h), intensities normalised; label maps sampled by nearest neighbour.
// Subjects with a label map and no image get a synthetic image from their labels for
// the alignment, and in training. The preprocessed volumes are cached on disk (NIfTI,
// keyed by the inputs' paths, sizes and times and the model grid), so that a second run
// or a resumed one does not redo the alignment.
#pragma once

#include <functional>
#include <string>

#include "autoreg/io/manifest.h"
#include "autoreg/registration/affine.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/training_set.h"

namespace autoreg::pipeline {

struct DatasetOptions {
  std::string cache_dir;              // created when missing
  registration::AffineOptions affine;
  std::function<void(const std::string&)> progress;  // one line per subject
  // > 0: a row that cannot be read is reported (through `progress`) and left out, and
  // loading fails only when more than this fraction of the rows do (or the reference
  // does). 0: the first unreadable row fails.
  double max_unreadable_fraction = 0;
  // Pairwise mode with one training subject (paired with deformed copies of itself, which
  // needs augmentation: train, adapt); else pairwise mode needs two.
  bool one_subject_pairs = false;
  // Each row left out (`what`: the manifest line and why), besides its progress line.
  std::function<void(const std::string& what)> skipped;
};

// The training set on info's grid (info.grid, info.spacing, info.normalization). A grid
// of {0, 0, 0} is chosen here (and written back): the reference's foreground box plus
// 8 mm on each side, at info.spacing, rounded up to a multiple of `size_multiple`.
// Throws io::IoError for unreadable inputs (beyond max_unreadable_fraction) or a cache
// folder it cannot create,
// std::invalid_argument for a manifest that cannot train (no reference image).
registration::TrainingSet load_training_set(const io::Manifest& manifest,
                                            registration::ModelInfo& info, int64_t size_multiple,
                                            const DatasetOptions& options);

}  // namespace autoreg::pipeline
