// Multi-atlas segmentation from files to files: what `autoreg segment` runs. The atlases
// of a manifest registered onto the target and fused (segment.h); the fused label map,
// optionally each label's probability, every atlas on the target's grid, the QC picture;
// the summary `autoreg segment --json` prints.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "autoreg/base/schema.h"
#include "autoreg/runs/segment.h"

namespace autoreg::pipeline {

struct SegmentJob {
  std::string atlases;            // CSV manifest: columns image,labels (paths relative to it)
  std::string target;             // the image to segment
  std::string out;                // the fused label map (target's grid); "": none (out_contours only)
  std::string out_probabilities;  // optional folder: label_<value>.nii.gz, each label's fused probability
  std::string out_warped_dir;     // optional folder: every atlas on the target's grid, with an atlases.csv
  std::string target_labels;      // optional: the target's own labels, for Dice in the summary
  std::string qc;                 // optional: the QC picture (PNG)
  // Optional, with a DICOM series as the target (its folder): the fused labels as a new RT
  // Structure Set on it, each label a structure named by the table `label_names`
  // (label,name[,red,green,blue]; without it "label N"); labels the table does not name
  // are left out when a table is given.
  std::string out_contours, label_names;
  bool out_inverse_fields = false;  // with out_warped_dir: every atlas's inverse field there too (options.pair.inverse)
  SegmentOptions options;         // options.pair from pair_options(settings): the model, read once
};

// The rows of the job's own settings (base/schema.h): `segment`'s options for the files
// and the fusion; the registration's are the settings table's (registration_settings.h).
const base::Schema<SegmentJob>& segment_schema();

// Throws io::IoError naming the file for bad input (an atlas row without both files, an
// unreadable volume, label maps off their grids), before any registration where it can.
nlohmann::json segment_files(SegmentJob job);

}  // namespace autoreg::pipeline
