// `--preset auto` (the default): the preset a pair is registered with, chosen from the
// images' own evidence, and how free its pre-alignment may be. A new user gives no
// options; a brain between subjects, a breathing abdomen and a planning CT onto the
// day's cone-beam CT each need other settings, and the wrong ones end worse than no
// registration (a 12-parameter affine stretched a planning CT onto a CBCT's field of view:
// Dice 0.37 → 0.20). The rule, in order (docs/beyond-brains.md has it as a table):
//   both scans Hounsfield-like (air at or below −500)            → ct-cbct
//   both MR (not Hounsfield-like), slices of 3 mm or more, the
//   body on a tenth of the grid's sides (a trunk, not a head)      → breathing
//   anything else                                                 → brain
// and, whatever the preset, two scans of one patient in one frame of reference (a CT
// pair that overlaps, or a cone-beam CT) are pre-aligned rigidly at most: scale and shear
// cannot be anatomy between them, only a fit to a field of view's edge.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>

#include "autoreg/io/volume.h"
#include "autoreg/pair/registration_settings.h"

namespace autoreg::pipeline {

// What one scan shows of itself, from its raw intensities and header.
struct ScanEvidence {
  // "ct" (air in Hounsfield units, soft tissue within 100 of 0 HU), "cbct" (Hounsfield-
  // like air, and soft tissue off HU or a cone-beam field of view: padding of at least 5 % of the
  // grid, not a CT's reconstruction circle at −1500 or below), "mr" (anything else).
  std::string kind;
  double low_percentile = 0;            // the 0.5th percentile of the intensities
  std::optional<double> padding;        // the padding around the field of view found (none: every voxel counts)
  double outside_fraction = 0;          // of the grid, outside the field of view
  std::optional<double> soft_tissue;    // Hounsfield-like scans: the median of what lies in (−400, 400)
  std::array<double, 3> extent_mm{};    // the grid's size along i, j, k
  double slice_mm = 0;                  // the largest spacing
  // The fraction of the grid's sides (the faces along the slices: all six for near-
  // isotropic voxels) that the body covers (above a tenth of the 99th percentile, or
  // −500 for Hounsfield-like scans): a trunk is cut by them, a head is not.
  double sides_covered = 0;
};

struct PairEvidence {
  ScanEvidence fixed, moving;
  double box_overlap = 0;   // the world boxes' intersection over the smaller box's volume
  // One patient in one frame of reference: both Hounsfield-like and either a cone-beam CT
  // or boxes that overlap by half (a CT follow-up in the scanner's frame).
  bool same_patient = false;
};

struct PresetChoice {
  std::string name;          // the preset registered with
  bool automatic = false;    // chosen by --preset auto (else given)
  std::string reason;        // one line: what was chosen and why
  // The pre-alignment limited to rigid because the pair is one patient's (it asked for
  // the affine's 12 parameters and was not given --rigid, --no-affine or the affine).
  bool rigid_at_most = false;
  PairEvidence evidence;
};

// `fixed_fov` and `moving_fov`: each image's field of view as register_pair found it
// (registration/field_of_view.h: the padding value and the fraction outside).
ScanEvidence scan_evidence(const io::Volume& volume, std::optional<double> padding, double outside_fraction);
PairEvidence pair_evidence(const ScanEvidence& fixed, const ScanEvidence& moving, const io::Geometry& fixed_grid,
                           const io::Geometry& moving_grid);

// The preset for `settings` (its own name unless it is "auto") and the settings the pair
// runs with: the preset's, then every setting given over it (RegistrationSettings::given),
// and the pre-alignment limited to rigid for one patient's scans.
PresetChoice choose_preset(const RegistrationSettings& settings, const PairEvidence& evidence);
RegistrationSettings chosen_settings(const RegistrationSettings& settings, const PresetChoice& choice);

// The --json record: {"name", "automatic", "reason", "rigid_at_most", "evidence": {...}}.
nlohmann::json choice_json(const PresetChoice& choice);

}  // namespace autoreg::pipeline
