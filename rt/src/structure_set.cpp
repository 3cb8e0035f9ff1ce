// RT Structure Sets read (structure_set.h): the Structure Set, ROI Contour and RT ROI
// Observations modules into plain structs.
#include "autoreg/rt/structure_set.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK asks
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcuid.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dicom_attributes.h"

namespace autoreg::rt {
namespace {

std::string describe(const Roi& roi) { return "ROI '" + roi.name + "' (number " + std::to_string(roi.number) + ")"; }

// An IS value such as ROINumber; `missing` when absent.
int integer(DcmItem& item, const DcmTagKey& tag, const std::string& file, const std::string& what, int missing) {
  const auto v = detail::numbers(item, tag, file, what);
  if (v.empty()) return missing;
  if (v[0] != std::floor(v[0]) || std::fabs(v[0]) > 2e9) detail::fail(file, what + " '" + std::to_string(v[0]) + "' is not an integer");
  return int(v[0]);
}

// ReferencedFrameOfReferenceSequence → RTReferencedStudySequence → RTReferencedSeriesSequence.
void read_references(DcmDataset& d, StructureSet& out) {
  DcmSequenceOfItems* frames = detail::sequence(d, DCM_ReferencedFrameOfReferenceSequence);
  for (unsigned long f = 0; frames && f < frames->card(); ++f) {
    DcmItem& frame = *frames->getItem(f);
    if (out.frame_of_reference_uid.empty()) out.frame_of_reference_uid = detail::text(frame, DCM_FrameOfReferenceUID);
    DcmSequenceOfItems* studies = detail::sequence(frame, DCM_RTReferencedStudySequence);
    for (unsigned long s = 0; studies && s < studies->card(); ++s) {
      DcmSequenceOfItems* series = detail::sequence(*studies->getItem(s), DCM_RTReferencedSeriesSequence);
      for (unsigned long r = 0; series && r < series->card(); ++r) {
        const std::string uid = detail::text(*series->getItem(r), DCM_SeriesInstanceUID);
        if (!uid.empty()) out.referenced_series_uids.push_back(uid);
      }
    }
  }
}

// StructureSetROISequence: numbers (unique), names, frames of reference.
void read_rois(DcmDataset& d, const std::string& path, StructureSet& out) {
  DcmSequenceOfItems* rois = detail::sequence(d, DCM_StructureSetROISequence);
  for (unsigned long i = 0; rois && i < rois->card(); ++i) {
    DcmItem& item = *rois->getItem(i);
    Roi roi;
    const std::string where = "StructureSetROISequence item " + std::to_string(i + 1);
    roi.name = detail::text(item, DCM_ROIName);
    roi.number = integer(item, DCM_ROINumber, path, where + ": ROINumber", -1);
    if (roi.number < 0) detail::fail(path, where + " ('" + roi.name + "') has no ROINumber");
    for (const Roi& other : out.rois)
      if (other.number == roi.number)
        detail::fail(path, "ROI number " + std::to_string(roi.number) + " is used twice ('" + other.name + "' and '" +
                               roi.name + "')");
    roi.frame_of_reference_uid = detail::text(item, DCM_ReferencedFrameOfReferenceUID);
    roi.generation_algorithm = detail::text(item, DCM_ROIGenerationAlgorithm);
    out.rois.push_back(std::move(roi));
  }
}

// One ContourSequence item into `roi` (closed planar ones) or a count of those skipped.
void read_contour(DcmItem& item, const std::string& path, int index, Roi& roi, std::map<std::string, int>& skipped) {
  const std::string where = describe(roi) + ", contour " + std::to_string(index);
  const std::string type = detail::text(item, DCM_ContourGeometricType);
  if (type != "CLOSED_PLANAR") {
    ++skipped[type.empty() ? "without ContourGeometricType" : type];
    return;
  }
  const int count = integer(item, DCM_NumberOfContourPoints, path, where + ": NumberOfContourPoints", -1);
  const auto data = detail::numbers(item, DCM_ContourData, path, where + ": ContourData");
  if (count < 0) detail::fail(path, where + " has no NumberOfContourPoints");
  if (data.size() != 3 * size_t(count))
    detail::fail(path, where + ": ContourData holds " + std::to_string(data.size()) + " numbers, not 3 x " +
                           "NumberOfContourPoints = " + std::to_string(3 * size_t(count)));
  if (count < 3)
    detail::fail(path, where + " is a closed planar contour of " + std::to_string(count) + " points (3 at least)");
  Contour contour;
  contour.points.resize(count);
  for (int p = 0; p < count; ++p) contour.points[p] = {data[3 * p], data[3 * p + 1], data[3 * p + 2]};
  if (DcmSequenceOfItems* images = detail::sequence(item, DCM_ContourImageSequence); images && images->card() > 0)
    contour.referenced_sop_instance_uid = detail::text(*images->getItem(0), DCM_ReferencedSOPInstanceUID);
  roi.contours.push_back(std::move(contour));
}

// ROIContourSequence: colours and contours of the ROIs read by read_rois.
void read_contours(DcmDataset& d, const std::string& path, StructureSet& out) {
  DcmSequenceOfItems* items = detail::sequence(d, DCM_ROIContourSequence);
  for (unsigned long i = 0; items && i < items->card(); ++i) {
    DcmItem& item = *items->getItem(i);
    const std::string where = "ROIContourSequence item " + std::to_string(i + 1);
    const int number = integer(item, DCM_ReferencedROINumber, path, where + ": ReferencedROINumber", -1);
    auto roi = std::find_if(out.rois.begin(), out.rois.end(), [&](const Roi& r) { return r.number == number; });
    if (roi == out.rois.end()) {
      out.notes.push_back(where + " is for ROI number " + std::to_string(number) +
                          ", which StructureSetROISequence lacks: skipped");
      continue;
    }
    const auto color = detail::numbers(item, DCM_ROIDisplayColor, path, describe(*roi) + ": ROIDisplayColor");
    if (color.size() == 3)
      // Clamped before the cast: a binary VR may hold any double.
      for (int c = 0; c < 3; ++c) roi->color[c] = std::isfinite(color[c]) ? int(std::clamp(color[c], 0.0, 255.0)) : 0;
    std::map<std::string, int> skipped;
    DcmSequenceOfItems* contours = detail::sequence(item, DCM_ContourSequence);
    for (unsigned long c = 0; contours && c < contours->card(); ++c)
      read_contour(*contours->getItem(c), path, int(c + 1), *roi, skipped);
    for (const auto& [type, n] : skipped)
      out.notes.push_back(describe(*roi) + ": " + std::to_string(n) + " contour(s) " + type +
                          " skipped (only CLOSED_PLANAR contours are areas)");
  }
}

// RTROIObservationsSequence: each ROI's interpreted type.
void read_observations(DcmDataset& d, const std::string& path, StructureSet& out) {
  DcmSequenceOfItems* items = detail::sequence(d, DCM_RTROIObservationsSequence);
  for (unsigned long i = 0; items && i < items->card(); ++i) {
    DcmItem& item = *items->getItem(i);
    const int number = integer(item, DCM_ReferencedROINumber, path,
                               "RTROIObservationsSequence item " + std::to_string(i + 1) + ": ReferencedROINumber", -1);
    for (Roi& roi : out.rois)
      if (roi.number == number) roi.interpreted_type = detail::text(item, DCM_RTROIInterpretedType);
  }
}

}  // namespace

StructureSet read_structure_set(const std::string& path) {
  const auto file = detail::load(path, /*headers_only=*/false);
  DcmDataset& d = *file->getDataset();
  const std::string sop_class = detail::text(d, DCM_SOPClassUID), modality = detail::text(d, DCM_Modality);
  if (sop_class != UID_RTStructureSetStorage || modality != "RTSTRUCT")
    detail::fail(path, "is not an RT Structure Set (SOP class '" + sop_class + "', modality '" + modality +
                           "'; an RTSTRUCT has SOP class " + UID_RTStructureSetStorage + ", modality RTSTRUCT)");
  StructureSet out;
  out.sop_instance_uid = detail::text(d, DCM_SOPInstanceUID);
  out.study_uid = detail::text(d, DCM_StudyInstanceUID);
  out.series_uid = detail::text(d, DCM_SeriesInstanceUID);
  out.label = detail::text(d, DCM_StructureSetLabel);
  out.name = detail::text(d, DCM_StructureSetName);
  out.patient_id = detail::text(d, DCM_PatientID);
  out.patient_name = detail::text(d, DCM_PatientName);
  read_references(d, out);
  read_rois(d, path, out);
  read_contours(d, path, out);
  read_observations(d, path, out);
  if (std::none_of(out.rois.begin(), out.rois.end(), [](const Roi& r) { return !r.contours.empty(); })) {
    std::string names;
    for (const Roi& r : out.rois) names += (names.empty() ? "" : ", ") + r.name;
    detail::fail(path, "no ROI has a closed planar contour (" + std::to_string(out.rois.size()) + " ROIs" +
                           (names.empty() ? "" : ": " + names) + ")");
  }
  return out;
}

void check_references(const StructureSet& structures, const DicomSeries& series, const std::string& structures_path,
                      const std::string& series_path) {
  for (const Roi& roi : structures.rois) {
    const std::string& frame = roi.frame_of_reference_uid.empty() ? structures.frame_of_reference_uid
                                                                   : roi.frame_of_reference_uid;
    if (roi.contours.empty() || frame.empty() || frame == series.frame_of_reference_uid) continue;
    throw DicomError(structures_path + ": " + describe(roi) + " is in frame of reference " + frame + ", but the series " +
                     series_path + " is in frame of reference " + series.frame_of_reference_uid +
                     ": the contours were drawn on another scan's coordinates");
  }
  const auto& refs = structures.referenced_series_uids;
  if (refs.empty() || std::find(refs.begin(), refs.end(), series.series_uid) != refs.end()) return;
  throw DicomError(structures_path + ": references series " + refs.front() + ", not the series " + series.series_uid +
                   " of " + series_path + ": give the structure set drawn on this series");
}

}  // namespace autoreg::rt
