// A new RT Structure Set written on a series: how contours carried onto another scan go
// back to the treatment planning system. The object references the series (its frame of
// reference, study, series and every slice), copies its patient and study, and is marked
// as derived from the source structure set and unapproved.
#pragma once

#include <string>
#include <vector>

#include "autoreg/rt/series.h"
#include "autoreg/rt/structure_set.h"

namespace autoreg::rt {

struct WriteInfo {
  std::string source_sop_instance_uid;  // the structure set the contours came from (empty: none)
  std::string source_label;             // its label or name, for the description
  std::string description;              // a sentence appended to StructureSetDescription
  std::string label = "autoreg";        // StructureSetLabel (SH: at most 16 characters)
  std::string series_description = "Contours deformed by autoreg";  // LO: at most 64
  int series_number = 1;
  std::string software_version;  // SoftwareVersions, when given
};

struct Written {
  std::string sop_instance_uid, series_uid;  // the new object's, freshly generated
  int contours = 0;                          // contours written, all ROIs together
};

// Writes `rois` as a new RTSTRUCT at `path` (atomically: base::write_atomically), Explicit
// VR Little Endian with file meta information: new SOP instance and series UIDs, the
// patient and study of `on` (its StudyInstanceUID), `on`'s frame of reference (Frame of
// Reference module, which dciodvfy asks for) and a ReferencedFrameOfReferenceSequence
// naming it, `on`'s study, series and every slice, one CLOSED_PLANAR
// contour item per contour referencing its slice (its referenced_sop_instance_uid, which
// must be one of `on`'s slices; an empty one is found from the contour's plane), ROI
// numbers, names, colours and interpreted types carried, ROIGenerationAlgorithm
// AUTOMATIC, ApprovalStatus UNAPPROVED, and the source structure set named in
// StructureSetDescription and PredecessorStructureSetSequence. Coordinates are written
// with up to 10 significant digits (DS: 16 characters a value). std::invalid_argument
// for ROIs with duplicate or non-positive numbers or a contour on no slice of `on`;
// base::WriteError when the file cannot be written.
Written write_structure_set(const std::string& path, const std::vector<Roi>& rois, const DicomSeries& on,
                            const WriteInfo& info);

}  // namespace autoreg::rt
