// A new RT Structure Set on a series (write.h), module by module as the RT Structure Set
// IOD lists them (DICOM PS3.3 A.19): Patient, General Study, RT Series, General
// Equipment, Structure Set, ROI Contour, RT ROI Observations, Approval, SOP Common.
#include "autoreg/rt/write.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK asks
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcuid.h>

#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <stdexcept>

#include "autoreg/base/atomic_file.h"
#include "dicom_attributes.h"

namespace autoreg::rt {
namespace {

using detail::append_item;
using detail::at_most;
using detail::date_and_time;
using detail::put;

void put_patient_study_series(DcmDataset& d, const DicomSeries& on, const WriteInfo& info, const Written& uids,
                              const std::pair<std::string, std::string>& now) {
  put(d, DCM_SOPClassUID, UID_RTStructureSetStorage);
  put(d, DCM_SOPInstanceUID, uids.sop_instance_uid);
  put(d, DCM_InstanceCreationDate, now.first);
  put(d, DCM_InstanceCreationTime, now.second);
  detail::put_patient_study(d, on);  // the series' patient and study: the object files under them
  // RT Series and General Equipment.
  put(d, DCM_Modality, "RTSTRUCT");
  put(d, DCM_SeriesInstanceUID, uids.series_uid);
  put(d, DCM_SeriesNumber, std::to_string(info.series_number));
  put(d, DCM_SeriesDate, now.first);
  put(d, DCM_SeriesTime, now.second);
  put(d, DCM_SeriesDescription, at_most(info.series_description, 64));
  put(d, DCM_OperatorsName, "");
  put(d, DCM_Manufacturer, "autoreg");
  if (!info.software_version.empty()) put(d, DCM_SoftwareVersions, at_most(info.software_version, 64));
}

// Structure Set module less its ROI sequence: label, what it was derived from, and the
// frame of reference → study → series → every slice it was drawn on.
void put_structure_set(DcmDataset& d, const DicomSeries& on, const WriteInfo& info,
                       const std::pair<std::string, std::string>& now) {
  put(d, DCM_StructureSetLabel, at_most(info.label, 16));
  const std::string source = info.source_label.empty() ? "" : " " + info.source_label;
  put(d, DCM_StructureSetName, at_most("Deformed" + source + " (autoreg)", 64));
  std::string description = "Contours deformed by autoreg (deformable registration)";
  if (!info.source_sop_instance_uid.empty() || !source.empty())
    description += " from structure set" + source +
                   (info.source_sop_instance_uid.empty() ? "" : " (SOP instance " + info.source_sop_instance_uid + ")");
  description += " onto series " + on.series_uid + ". Not reviewed: check before clinical use.";
  if (!info.description.empty()) description += " " + info.description;
  put(d, DCM_StructureSetDescription, at_most(description, 1024));
  put(d, DCM_InstanceNumber, "1");
  put(d, DCM_StructureSetDate, now.first);
  put(d, DCM_StructureSetTime, now.second);
  if (!info.source_sop_instance_uid.empty()) {
    DcmItem& predecessor = append_item(d, DCM_PredecessorStructureSetSequence);
    put(predecessor, DCM_ReferencedSOPClassUID, UID_RTStructureSetStorage);
    put(predecessor, DCM_ReferencedSOPInstanceUID, info.source_sop_instance_uid);
  }
  // Frame of Reference module (dicom3tools' RT Structure Set IOD has it): the series'.
  put(d, DCM_FrameOfReferenceUID, on.frame_of_reference_uid);
  put(d, DCM_PositionReferenceIndicator, "");
  DcmItem& frame = append_item(d, DCM_ReferencedFrameOfReferenceSequence);
  put(frame, DCM_FrameOfReferenceUID, on.frame_of_reference_uid);
  DcmItem& study = append_item(frame, DCM_RTReferencedStudySequence);
  // The RT modules still name the retired Detached Study Management class here.
  put(study, DCM_ReferencedSOPClassUID, UID_RETIRED_DetachedStudyManagementSOPClass);
  put(study, DCM_ReferencedSOPInstanceUID, on.study_uid);
  DcmItem& series = append_item(study, DCM_RTReferencedSeriesSequence);
  put(series, DCM_SeriesInstanceUID, on.series_uid);
  for (const Slice& slice : on.slices) {
    DcmItem& image = append_item(series, DCM_ContourImageSequence);
    put(image, DCM_ReferencedSOPClassUID, slice.sop_class_uid);
    put(image, DCM_ReferencedSOPInstanceUID, slice.sop_instance_uid);
  }
}

// The slice a contour lies on: its referenced UID, or its first point's plane.
const Slice& slice_of(const Contour& contour, const Roi& roi, size_t index, const DicomSeries& on,
                      const std::map<std::string, size_t>& by_uid) {
  const std::string where = "write_structure_set: ROI '" + roi.name + "', contour " + std::to_string(index + 1);
  if (contour.points.size() < 3) throw std::invalid_argument(where + " has fewer than 3 points");
  if (!contour.referenced_sop_instance_uid.empty()) {
    const auto found = by_uid.find(contour.referenced_sop_instance_uid);
    if (found == by_uid.end())
      throw std::invalid_argument(where + " references slice " + contour.referenced_sop_instance_uid +
                                  ", which is not in the series " + on.series_uid);
    return on.slices[found->second];
  }
  const double k = std::round(physical_to_index(on.grid, contour.points.front())[2]);
  if (!(k >= 0 && k < double(on.slices.size()))) throw std::invalid_argument(where + " lies on no slice of the series");
  return on.slices[size_t(k)];
}

std::string contour_data(const Contour& contour, const std::string& where) {
  std::string data;
  data.reserve(contour.points.size() * 3 * 12);
  for (const auto& p : contour.points)
    for (const double v : p) {
      if (!std::isfinite(v)) throw std::invalid_argument(where + " has a coordinate that is not finite");
      if (!data.empty()) data += '\\';
      data += detail::format_ds(v);
    }
  return data;
}

// StructureSetROISequence, ROIContourSequence and RTROIObservationsSequence; the number
// of contours written.
int put_rois(DcmDataset& d, const std::vector<Roi>& rois, const DicomSeries& on) {
  std::map<std::string, size_t> by_uid;
  for (size_t k = 0; k < on.slices.size(); ++k) by_uid.emplace(on.slices[k].sop_instance_uid, k);
  std::set<int> numbers;
  int written = 0;
  for (const Roi& roi : rois) {
    if (roi.number <= 0 || !numbers.insert(roi.number).second)
      throw std::invalid_argument("write_structure_set: ROI '" + roi.name + "' has number " +
                                  std::to_string(roi.number) + ", not a positive number of its own");
    const std::string number = std::to_string(roi.number);
    DcmItem& item = append_item(d, DCM_StructureSetROISequence);
    put(item, DCM_ROINumber, number);
    put(item, DCM_ReferencedFrameOfReferenceUID, on.frame_of_reference_uid);
    put(item, DCM_ROIName, at_most(roi.name, 64));
    put(item, DCM_ROIGenerationAlgorithm, "AUTOMATIC");
    put(item, DCM_ROIGenerationDescription, "deformable registration (autoreg)");

    DcmItem& contours = append_item(d, DCM_ROIContourSequence);
    put(contours, DCM_ReferencedROINumber, number);
    put(contours, DCM_ROIDisplayColor, std::to_string(roi.color[0]) + "\\" + std::to_string(roi.color[1]) + "\\" +
                                           std::to_string(roi.color[2]));
    for (size_t c = 0; c < roi.contours.size(); ++c) {
      const Contour& contour = roi.contours[c];
      const Slice& slice = slice_of(contour, roi, c, on, by_uid);
      DcmItem& one = append_item(contours, DCM_ContourSequence);
      put(one, DCM_ContourNumber, std::to_string(c + 1));
      DcmItem& image = append_item(one, DCM_ContourImageSequence);
      put(image, DCM_ReferencedSOPClassUID, slice.sop_class_uid);
      put(image, DCM_ReferencedSOPInstanceUID, slice.sop_instance_uid);
      put(one, DCM_ContourGeometricType, "CLOSED_PLANAR");
      put(one, DCM_NumberOfContourPoints, std::to_string(contour.points.size()));
      put(one, DCM_ContourData, contour_data(contour, "write_structure_set: ROI '" + roi.name + "', contour " +
                                                          std::to_string(c + 1)));
      ++written;
    }

    DcmItem& observation = append_item(d, DCM_RTROIObservationsSequence);
    put(observation, DCM_ObservationNumber, number);
    put(observation, DCM_ReferencedROINumber, number);
    put(observation, DCM_RTROIInterpretedType, roi.interpreted_type);
    put(observation, DCM_ROIInterpreter, "");
  }
  // Type 1 sequences: present even when there is no ROI.
  if (rois.empty()) {
    detail::put_empty_sequence(d, DCM_StructureSetROISequence);
    detail::put_empty_sequence(d, DCM_ROIContourSequence);
    detail::put_empty_sequence(d, DCM_RTROIObservationsSequence);
  }
  return written;
}

}  // namespace

Written write_structure_set(const std::string& path, const std::vector<Roi>& rois, const DicomSeries& on,
                            const WriteInfo& info) {
  if (on.slices.empty() || on.frame_of_reference_uid.empty() || on.study_uid.empty() || on.series_uid.empty())
    throw std::invalid_argument("write_structure_set: the series " + on.folder + " lacks slices or UIDs");
  Written out;
  out.sop_instance_uid = detail::new_uid(false);
  out.series_uid = detail::new_uid(true);
  DcmFileFormat file;
  DcmDataset& d = *file.getDataset();
  const auto now = date_and_time();
  put_patient_study_series(d, on, info, out, now);
  put_structure_set(d, on, info, now);
  out.contours = put_rois(d, rois, on);
  put(d, DCM_ApprovalStatus, "UNAPPROVED");
  base::write_atomically(path, [&](const std::string& tmp) {
    const OFCondition status = file.saveFile(tmp.c_str(), EXS_LittleEndianExplicit);
    if (status.bad()) throw base::WriteError(path + ": cannot write (" + std::string(status.text()) + ")");
  });
  return out;
}

}  // namespace autoreg::rt
