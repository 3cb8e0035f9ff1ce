// The rows of `register`'s files of one pair (register_job.h): its options, made by the
// command line from them as every job's are (base/schema.h).
#include <stdexcept>
#include <string>

#include "autoreg/base/schema.h"
#include "autoreg/io/grid.h"
#include "autoreg/pair/register_job.h"

namespace autoreg::pipeline {

std::string checked_orientation(const std::string& option, const std::string& code) {
  if (code.empty()) return code;
  try {
    io::with_orientation(io::Geometry{}, code);
  } catch (const std::invalid_argument& e) {
    throw base::UsageError(option + ": " + e.what());
  }
  return code;
}

namespace {

using J = RegisterJob;

// A header override of the `whose` image.
base::SettingField<J> orientation(const char* keyword, const char* option, const char* whose, std::string J::*m) {
  return orientation_field<J>(keyword, option,
                              std::string("override a wrong header: where the ") + whose + " voxel axes point, e.g. LIA", m);
}

}  // namespace

const base::Schema<RegisterJob>& register_job_schema() {
  static const base::Schema<J> schema{
      base::text_field<J>("fixed", "fixed", "FILE", "fixed image", &J::fixed),
      base::text_field<J>("moving", "moving", "FILE", "moving image", &J::moving),
      base::text_field<J>("out_warped", "out-warped", "FILE|DIR/",
                          "moving image on the fixed grid; a name ending in / (with a DICOM series as --fixed): a new CT series in that "
                          "folder, on the fixed series' geometry and frame of reference, in HU",
                          &J::out_warped),
      base::text_field<J>("out_field", "out-field", "FILE",
                          "displacement field, affine and deformable together (LPS mm, fixed grid; .h5: ITK DisplacementFieldTransform)",
                          &J::out_field),
      base::text_field<J>("fixed_labels", "fixed-labels", "FILE",
                          "the fixed image's label map: the summary reports the warped labels' mean Dice over its labels", &J::fixed_labels),
      base::text_field<J>("fixed_points", "fixed-points", "FILE",
                          "landmarks of the fixed image (.csv LPS as ANTs, elastix .txt/.pts, .vtk, Slicer .fcsv/.mrk.json): with "
                          "--moving-points, the summary reports their TRE (mm) after registration",
                          &J::fixed_points),
      base::text_field<J>("moving_points", "moving-points", "FILE", "the same landmarks, in the same order, in the moving image",
                          &J::moving_points),
      base::text_field<J>("fixed_mask", "fixed-mask", "FILE",
                          "a mask of the fixed image (non-zero inside, on its grid): only the voxels inside it are compared "
                          "(cost-function masking, as ANTs -x), in the affine, instance optimisation and --refine; the field covers the "
                          "whole grid",
                          &J::fixed_mask),
      base::text_field<J>("moving_mask", "moving-mask", "FILE",
                          "a mask of the moving image (on its grid): only fixed voxels whose match lies inside it are compared",
                          &J::moving_mask),
      base::text_field<J>("moving_labels", "moving-labels", "FILE", "moving label map to warp", &J::moving_labels),
      base::text_field<J>("out_labels", "out-labels", "FILE",
                          "warped label map (of --moving-labels, or of the structures of --moving-contours, each its ROI number, with a "
                          "table FILE.csv of label, name and colour)",
                          &J::out_labels),
      base::text_field<J>("moving_contours", "moving-contours", "RS.dcm",
                          "an RT Structure Set (RTSTRUCT .dcm) drawn on the moving DICOM series (--moving: its folder): its structures "
                          "are carried onto the fixed series; --out-contours writes them",
                          &J::moving_contours),
      base::text_field<J>("fixed_contours", "fixed-contours", "RS.dcm",
                          "the RT Structure Set drawn on the fixed DICOM series: the summary reports each carried structure's Dice "
                          "against the one of the same name (or the same but for its last _ part)",
                          &J::fixed_contours),
      base::text_field<J>("out_contours", "out-contours", "RS.dcm",
                          "with --moving-contours: a new RT Structure Set on the fixed DICOM series (--fixed: its folder), the "
                          "structures carried by the registration",
                          &J::out_contours),
      base::text_field<J>("out_affine", "out-affine", "FILE", "the affine alone, as an ITK transform file (.tfm, .txt, .mat, .h5)",
                          &J::out_affine),
      base::text_field<J>("out_inverse_field", "out-inverse-field", "FILE",
                          "the inverse map, on the moving grid (LPS mm, like --out-field): the velocities integrated backwards and the "
                          "affine inverted; `autoreg apply` carries fixed-grid images onto the moving grid with it",
                          &J::out_inverse_field),
      base::text_field<J>("qc", "qc", "FILE.png",
                          "a picture to check the result (PNG): three orthogonal slices of the fixed image, the warped moving one, "
                          "their checkerboard, the warped labels' outlines, the log Jacobian; with --pairs every pair gets one and "
                          "index.html lists them worst first",
                          &J::qc),
      orientation("fixed_orientation", "fixed-orientation", "fixed image's", &J::fixed_orientation),
      orientation("moving_orientation", "moving-orientation", "moving image's (and labels')", &J::moving_orientation),
      base::switch_field<J>("force", "force", "resample a label map or mask that is not on its image's grid (nearest neighbour)",
                            &J::force)};
  return schema;
}

}  // namespace autoreg::pipeline
