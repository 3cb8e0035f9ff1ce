// What `autoreg apply` does, as a library job: a displacement field written by `autoreg
// register` (or by ANTs: the same convention), or an affine ITK transform file, applied
// to another image or label map on any grid (each reference voxel x takes the moving
// volume's value at x + d(x), or A·x, in one interpolation), or to points of the fixed
// image (x to x + d(x), or A·x, their order and extra columns kept). Outputs are written
// atomically; io::IoError names the file for bad input. Python applies fields in memory
// through the same calls (io::sample_mapped, io::displace_points).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "autoreg/io/points.h"

namespace autoreg::pipeline {

struct ApplyJob {
  std::string field;               // a displacement field, or an affine (.tfm, .txt, .mat)
  std::string moving, reference;   // the image or label map to warp; the output grid ("": the field's own)
  std::string out;                 // the warped volume
  std::string moving_orientation;  // "": the header's; else where the moving voxel axes point (LIA)
  bool labels = false;             // nearest neighbour, integer output (label maps)
  std::string qc;                  // "": none; else a PNG of the result on the reference
};
void apply_files(const ApplyJob& job);

struct ApplyPointsJob {
  std::string field;                   // as above
  std::string points, out;             // the fixed image's points; the moved ones (format by name)
  io::PointFileOptions point_options;  // voxel-index points: their grid and base
};
void apply_points_files(const ApplyPointsJob& job);

// An RT Structure Set drawn on the moving DICOM series carried through the field (or
// affine) onto the reference series and written there as a new one (contours_job.h:
// carry_contours, write_carried_contours); with `fixed_contours`, each carried structure
// scored against the reference series' own. Returns the carried structures' summary
// (register --json's "contours").
struct ApplyContoursJob {
  std::string field;
  std::string contours, moving;  // the structure set and the series folder it is drawn on
  std::string reference;         // the series folder to carry it onto (the field's grid)
  std::string out;               // the new structure set
  std::string fixed_contours;    // optional: the reference series' own structure set
};
nlohmann::json apply_contours_files(const ApplyContoursJob& job);

}  // namespace autoreg::pipeline
