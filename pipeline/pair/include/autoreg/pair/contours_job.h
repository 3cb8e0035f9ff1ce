// A pair's contours as the radiotherapy clinic keeps them: RT Structure Sets on DICOM
// series (rt/), read with the pair, carried onto the fixed series by the registration's
// result and written as a new structure set there (`register --moving-contours RS.dcm
// --out-contours RS_on_fixed.dcm`), and compared per structure with the fixed series'
// own structure set (`--fixed-contours`). Every structure is carried as its own mask (a
// structure set's structures overlap: a body holds its organs), sampled trilinearly
// through the map and contoured at one half on each slice of the fixed series.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "autoreg/io/volume.h"
#include "autoreg/rt/series.h"
#include "autoreg/rt/structure_set.h"

namespace autoreg::pipeline {

struct RegisterJob;

// The structure sets of a pair and the series they are drawn on; `moving` and `fixed`
// hold no structures where no file was given. The fixed series is read too where an
// output is written on it (--out-contours, --out-warped DIR/).
struct PairContours {
  std::string moving_file, fixed_file;
  rt::StructureSet moving, fixed;
  rt::DicomSeries moving_series, fixed_series;  // read where a structure set needs one
  bool carried() const { return !moving_file.empty(); }
};

// Reads job.moving_contours and job.fixed_contours and the DICOM series they are drawn on
// or written on (job.moving, job.fixed: folders of one series each), and checks that each structure set
// references its series' frame of reference and that the series' geometry is the grid
// the images were read on. Throws io::IoError naming the file at fault.
PairContours read_pair_contours(const RegisterJob& job, const io::Geometry& moving_grid, const io::Geometry& fixed_grid);

// The moving structures carried onto the fixed series through `displacement` (the pair's
// result, 1×3×D×H×W voxels of the fixed grid), and per structure what was carried: its
// volume drawn and on the fixed grid, the share that left the fixed field of view, the
// contours written; with fixed structures, the Dice of the carried structure (as the
// written contours rasterise again) against the fixed one of the same name.
// With `labels`: the carried structures also as one label map on the fixed grid (int32,
// each structure its ROI number; where structures overlap, the smaller one's).
struct CarriedContours {
  std::vector<rt::Roi> rois;
  nlohmann::json summary;
  at::Tensor labels;
};
CarriedContours carry_contours(const PairContours& contours, const io::Geometry& moving_grid,
                               const io::Geometry& fixed_grid, const at::Tensor& displacement, bool labels = false);

// The table beside a label map of carried structures (`labels.nii.gz` → `labels.csv`):
// label, name and colour of each structure.
std::string label_table_path(const std::string& labels);
void write_label_table(const std::string& path, const CarriedContours& carried);

// Whether `path` names a DICOM series folder to write (`--out-warped DIR/`): it ends with
// '/'.
bool names_dicom_folder(const std::string& path);
// Throws io::IoError unless a DICOM series can be written into `folder`: new or empty, in
// a folder that exists.
void check_dicom_output(const std::string& folder);
// Writes the warped moving image (Hounsfield units) as a new CT series on the fixed series
// (contours.fixed_series: read when job.out_warped names a folder), one file a slice.
void write_warped_series(const std::string& folder, const io::Volume& warped, const PairContours& contours,
                         const std::string& moving);

// Writes the carried structures as a new RT Structure Set on the fixed series.
void write_carried_contours(const std::string& path, const PairContours& contours, const CarriedContours& carried);

// The DICOM series in `folder`, checked to make `grid` (the grid its image was read on):
// what a structure set `file` is drawn on or written on. io::IoError naming both
// otherwise, or when `folder` is a file.
rt::DicomSeries series_of_image(const std::string& folder, const io::Geometry& grid, const std::string& file);

// The DICOM series in `folder`; io::IoError "<folder>: <why>" when it is not a folder,
// rt::DicomError for a folder that holds no single readable series.
rt::DicomSeries read_series_folder(const std::string& folder, const std::string& why);
// The structure set `file` drawn on `series` (read from `folder`): its references checked
// (rt::DicomError naming both otherwise).
rt::StructureSet read_structure_set_on(const std::string& file, const rt::DicomSeries& series, const std::string& folder);

// Structures given as masks on a series' grid (voxel_count(series.grid) values, 1 inside),
// each contoured at one half on every slice and written as a new RT Structure Set on the
// series (`segment --out-contours`, Python's write_contours). Returns the contours written.
// io::IoError naming `path` for a mask off the grid or a bad ROI number.
struct StructureMask {
  rt::Roi roi;  // number, name, colour, interpreted type (its contours are made here)
  std::vector<uint8_t> mask;
};
int write_structure_masks(const std::string& path, std::vector<StructureMask> structures, const rt::DicomSeries& series,
                          const std::string& description);

// A label table, label,name[,red,green,blue] (what `register --out-labels` writes beside
// carried structures): each label's ROI number, name and colour. io::IoError naming the
// file and line for a label that is not a positive whole number or a colour out of 0-255.
std::vector<rt::Roi> read_label_table(const std::string& path);

// `autoreg evaluate --fixed-contours A --warped-contours B --series DIR`: two structure
// sets drawn on one DICOM series (the fixed one's expert contours, and those carried onto
// it), each structure of B filled on the series' grid and scored against A's structure of
// the same name (matching_structure): {"structures": [{name, compared_with, dice,
// hd95_mm, volume_ml, reference_volume_ml}], "mean_dice", "mean_hd95_mm"}; a structure with
// no match has compared_with null and no scores. io::IoError naming the file at fault.
nlohmann::json compare_structure_sets(const std::string& fixed_file, const std::string& warped_file,
                                      const std::string& series_folder);

// The fixed structure a moving one is compared with: the same name (ignoring case), or
// else the one name that agrees but for its last `_` part (`Bowel_sm_planCT` and
// `Bowel_sm_CBCT`: the series each was drawn on); -1 where none or several do.
int matching_structure(const std::string& name, const std::vector<rt::Roi>& candidates);

}  // namespace autoreg::pipeline
