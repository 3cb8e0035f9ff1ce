// A DICOM image series read from its folder, headers only: the slices' UIDs in the
// order of their positions along the slice normal, the grid they form, and the patient
// and study attributes a new object on this series must copy (write.h). What an RT
// Structure Set is checked against (structure_set.h) and rasterised onto (rasterise.h).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "autoreg/rt/errors.h"
#include "autoreg/rt/grid.h"

namespace autoreg::rt {

// One slice (one file) of the series.
struct Slice {
  std::string sop_class_uid;
  std::string sop_instance_uid;
  std::array<double, 3> position{0, 0, 0};  // ImagePositionPatient, LPS mm
  std::string file;
};

// The Patient and General Study modules' attributes as the series holds them (values as
// written, empty when absent), copied into objects made for this series.
struct PatientStudy {
  std::string patient_name, patient_id, patient_birth_date, patient_sex;
  std::string study_date, study_time, study_id, accession_number, referring_physician_name,
      study_description;
  std::string specific_character_set;  // of the series' files, for the copied names
};

struct DicomSeries {
  std::string folder;
  std::string study_uid, series_uid, frame_of_reference_uid, modality;
  PatientStudy patient;
  std::vector<Slice> slices;  // slice k of the grid is slices[k]
  Grid grid;                  // as ITK's GDCM series reader gives it (see read_series)
  std::vector<std::string> notes;  // files of the folder that were skipped, and why
};

// Reads the headers (not the pixel data) of every file in `folder` and returns the one
// image series they hold. Files that are not DICOM, and DICOM objects without an image
// plane (an RTSTRUCT beside the slices, a DICOMDIR), are skipped with a note. The grid is
// ITK's: slices sorted along the normal (row cosine × column cosine), origin the first
// slice's ImagePositionPatient, spacing (column spacing, row spacing) from PixelSpacing
// — whose first value is the spacing between rows — and the distance between the first
// and last slices over their count less one, direction columns row cosine, column
// cosine, normal. DicomError naming the folder (and the file at fault) for: no image
// slice, more than one SeriesInstanceUID (naming two), a slice without
// FrameOfReferenceUID or with another one, orientations, pixel spacings or sizes that
// differ between slices, two slices at one position, slices not stacked along their
// normal (gantry tilt), a gap more than 1 % off the median gap (a missing slice).
DicomSeries read_series(const std::string& folder);

}  // namespace autoreg::rt
