// A volume written as a new DICOM CT image series on another series' grid: how the
// planning CT deformed onto the day's scan goes back to the treatment planning system
// (which recomputes dose on it). One file per slice of that series, in its frame of
// reference, study and patient, HU kept (signed 16-bit, rescale slope 1, intercept 0).
#pragma once

#include <cstdint>
#include <string>

#include "autoreg/rt/series.h"

namespace autoreg::rt {

struct ImageSeriesInfo {
  std::string series_description = "autoreg: deformed onto this scan";  // LO: cut to 64 characters
  std::string derivation_description;  // LT (DerivationDescription): what was deformed onto what
  std::string source_series_uid;       // the moving series, where known: named in DerivationDescription
  int series_number = 901;
  std::string software_version;  // SoftwareVersions, when given
};

struct WrittenSeries {
  std::string series_uid;       // the new series' SeriesInstanceUID, freshly generated
  int files = 0;                // one per slice of the series written on
  double largest_rounding = 0;  // largest |value - stored integer| over the values not clamped, HU
  int64_t clipped = 0;          // values outside [-32768, 32767], stored as the nearer bound
};

// Writes `values` (voxel_count(on.grid) floats in grid.h's order, Hounsfield units) as a
// new CT image series in `folder`, one file per slice k of `on` (0001.dcm, 0002.dcm, ...
// in slice order; at least 4 digits), Explicit VR Little Endian with file meta
// information. CT Image Storage: new series UID and a new SOP instance UID per slice,
// the patient and study of `on` (its StudyInstanceUID, SpecificCharacterSet, and the
// PatientPosition, BodyPartExamined and Laterality of its first slice's file when
// readable: Laterality empty when neither is known), `on`'s frame of reference,
// ImagePositionPatient of on.slices[k], ImageOrientationPatient the grid's first two
// direction columns, PixelSpacing (spacing along j, spacing along i), SliceThickness the
// slice spacing, ImageType DERIVED\SECONDARY\AXIAL, Manufacturer "autoreg", the values
// rounded to the nearest integer and clamped to [-32768, 32767] (PixelRepresentation 1,
// RescaleSlope 1, RescaleIntercept 0, RescaleType HU), window 40 / 400.
//
// Whole or not at all: the files are written into a temporary folder beside `folder`
// (base/'s temporary naming, so that a killed run's is cleaned up later) renamed onto
// `folder` at the end; on any failure the temporary folder is removed and the exception
// propagates. std::invalid_argument when `folder` exists and is not an empty folder,
// when `on` lacks slices or UIDs or its slices do not match its grid, when `values` is
// null, or when a value is not finite (naming the slice, 1-based, and the voxel);
// base::WriteError when a file cannot be written or the folder renamed into place.
WrittenSeries write_image_series(const std::string& folder, const float* values, const DicomSeries& on,
                                 const ImageSeriesInfo& info);

}  // namespace autoreg::rt
