// DICOM RT Structure Sets (RTSTRUCT) read: the ROIs with their numbers, names, colours
// and closed planar contours, and the frame of reference and series they were drawn on.
// RTSTRUCT convention: a contour is a closed polygon in one image plane, in LPS mm; an
// ROI's contours on one slice combine by the even-odd rule (a contour inside another is
// a hole, separate ones are islands); rasterise.h fills them on a grid.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "autoreg/rt/errors.h"
#include "autoreg/rt/series.h"

namespace autoreg::rt {

struct Contour {
  std::vector<std::array<double, 3>> points;  // LPS mm; closed (the last point joins the first)
  std::string referenced_sop_instance_uid;    // the slice it was drawn on (may be empty)
};

struct Roi {
  int number = 0;  // ROINumber, unique in the structure set
  std::string name;
  std::array<int, 3> color{255, 0, 0};  // ROIDisplayColor, RGB 0..255
  std::string generation_algorithm;     // ROIGenerationAlgorithm (AUTOMATIC, SEMIAUTOMATIC, MANUAL)
  std::string interpreted_type;         // RTROIInterpretedType (ORGAN, PTV, ...; may be empty)
  std::string frame_of_reference_uid;   // ReferencedFrameOfReferenceUID
  std::vector<Contour> contours;        // closed planar contours only
};

struct StructureSet {
  std::string sop_instance_uid, study_uid, series_uid;
  std::string frame_of_reference_uid;  // the first ReferencedFrameOfReferenceSequence item's
  std::vector<std::string> referenced_series_uids;  // RTReferencedSeriesSequence's, all items
  std::string label, name, patient_id, patient_name;
  std::vector<Roi> rois;  // in StructureSetROISequence's order; an ROI may have no contour
  std::vector<std::string> notes;  // what was skipped (open contours, points), one line each
};

// Reads an RTSTRUCT file. OPEN_PLANAR and POINT contours, and ROIContourSequence items for
// an ROI the StructureSetROISequence lacks, are skipped with a note. DicomError starting
// with `path` and naming the ROI (name and number) and contour (1-based) at fault for: a
// file that is not an RT Structure Set (SOP class or modality), duplicate ROI numbers,
// ContourData holding other than 3 × NumberOfContourPoints numbers, a number that is
// malformed or not finite, a closed planar contour of fewer than 3 points, and a
// structure set in which no ROI has a closed planar contour.
StructureSet read_structure_set(const std::string& path);

// DicomError when the structure set was drawn on another scan than `series`: an ROI with
// contours in another frame of reference, or (when the structure set names series) a
// referenced series other than this one. The message names both UIDs and both paths.
void check_references(const StructureSet& structures, const DicomSeries& series, const std::string& structures_path,
                      const std::string& series_path);

}  // namespace autoreg::rt
