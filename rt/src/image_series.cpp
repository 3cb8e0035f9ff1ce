// A volume as a new CT image series on a series' grid (image_series.h), module by module
// as the CT Image IOD lists them (DICOM PS3.3 A.3): Patient, General Study, General
// Series, Frame of Reference, General Equipment, General Image, Image Plane, Image Pixel,
// CT Image, VOI LUT, SOP Common.
#include "autoreg/rt/image_series.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK asks
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcmetinf.h>
#include <dcmtk/dcmdata/dcuid.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "autoreg/base/atomic_file.h"
#include "dicom_attributes.h"

namespace autoreg::rt {
namespace {

namespace fs = std::filesystem;
using detail::format_ds;
using detail::at_most;
using detail::date_and_time;
using detail::put;

std::string ds_list(std::initializer_list<double> values) {
  std::string out;
  for (const double v : values) out += (out.empty() ? "" : "\\") + format_ds(v);
  return out;
}

void put_us(DcmItem& item, const DcmTagKey& tag, Uint16 value) {
  if (item.putAndInsertUint16(tag, value).bad())
    throw std::runtime_error("cannot set DICOM element " + std::string(DcmTag(tag).getTagName()));
}

// The folder's path without trailing separators (its temporary is named after its last
// component); std::invalid_argument when it exists and is not an empty folder.
std::string check_folder(const std::string& folder) {
  std::string path = folder;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) throw std::invalid_argument("write_image_series: no output folder given");
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status))
      throw std::invalid_argument("write_image_series: " + folder + " exists and is not a folder");
    if (!fs::is_empty(path, ec) || ec)
      throw std::invalid_argument("write_image_series: the folder " + folder +
                                  " is not empty (a DICOM series is written into a new or empty folder)");
  }
  return path;
}

// What the series' first slice file says of the patient's position and body part, which
// read_series does not keep: PatientPosition (HFS, FFS, ...: how the planning system
// orients the patient), BodyPartExamined and Laterality. Empty when it cannot be read.
struct SourceHeader {
  std::string patient_position, body_part, laterality;
};

SourceHeader source_header(const DicomSeries& on) {
  SourceHeader h;
  try {
    const auto file = detail::load(on.slices.front().file, /*headers_only=*/true);
    DcmDataset& d = *file->getDataset();
    h.patient_position = detail::text(d, DCM_PatientPosition);
    h.body_part = detail::text(d, DCM_BodyPartExamined);
    h.laterality = detail::text(d, DCM_Laterality);
  } catch (const std::exception&) {
  }
  return h;
}

std::string derivation(const DicomSeries& on, const ImageSeriesInfo& info) {
  std::string text = info.derivation_description;
  if (text.empty()) {
    text = "Deformed by autoreg (deformable image registration)";
    if (!info.source_series_uid.empty()) text += " from series " + info.source_series_uid;
    text += " onto the grid and frame of reference of series " + on.series_uid +
            ". Not reviewed: check before clinical use.";
  } else if (!info.source_series_uid.empty() && text.find(info.source_series_uid) == std::string::npos) {
    text += " (source series " + info.source_series_uid + ")";
  }
  return at_most(text, 10240);
}

// The attributes every slice shares (all but SOP Instance UID, Instance Number, Image
// Position and Pixel Data).
void put_common(DcmDataset& d, const DicomSeries& on, const ImageSeriesInfo& info, const std::string& series_uid,
                const SourceHeader& source, const std::pair<std::string, std::string>& now) {
  const Grid& g = on.grid;
  put(d, DCM_ImageType, "DERIVED\\SECONDARY\\AXIAL");
  put(d, DCM_SOPClassUID, UID_CTImageStorage);
  put(d, DCM_InstanceCreationDate, now.first);
  put(d, DCM_InstanceCreationTime, now.second);
  detail::put_patient_study(d, on);  // the series' patient and study: the new series files under them
  // General Series and General Equipment.
  put(d, DCM_Modality, "CT");
  put(d, DCM_SeriesInstanceUID, series_uid);
  put(d, DCM_SeriesNumber, std::to_string(info.series_number));
  put(d, DCM_SeriesDate, now.first);
  put(d, DCM_SeriesTime, now.second);
  put(d, DCM_SeriesDescription, at_most(info.series_description, 64));
  put(d, DCM_OperatorsName, "");
  put(d, DCM_PatientPosition, source.patient_position);
  // Laterality is type 2C (a paired body part): the source's when it has one; empty
  // (unknown) when the body part is unknown; absent for a known body part without one.
  if (!source.body_part.empty()) put(d, DCM_BodyPartExamined, source.body_part);
  if (!source.laterality.empty() || source.body_part.empty()) put(d, DCM_Laterality, source.laterality);
  put(d, DCM_Manufacturer, "autoreg");
  if (!info.software_version.empty()) put(d, DCM_SoftwareVersions, at_most(info.software_version, 64));
  // Frame of Reference: the series'.
  put(d, DCM_FrameOfReferenceUID, on.frame_of_reference_uid);
  put(d, DCM_PositionReferenceIndicator, "");
  // General Image.
  put(d, DCM_ContentDate, now.first);
  put(d, DCM_ContentTime, now.second);
  put(d, DCM_DerivationDescription, derivation(on, info));
  // Image Plane: direction columns 0 and 1 are the row and column cosines.
  const auto& m = g.direction;
  put(d, DCM_ImageOrientationPatient, ds_list({m[0], m[3], m[6], m[1], m[4], m[7]}));
  put(d, DCM_PixelSpacing, ds_list({g.spacing[1], g.spacing[0]}));  // between rows, then columns
  put(d, DCM_SliceThickness, format_ds(g.spacing[2]));
  // Image Pixel and CT Image: signed 16-bit HU.
  put_us(d, DCM_SamplesPerPixel, 1);
  put(d, DCM_PhotometricInterpretation, "MONOCHROME2");
  put_us(d, DCM_Rows, Uint16(g.size[1]));
  put_us(d, DCM_Columns, Uint16(g.size[0]));
  put_us(d, DCM_BitsAllocated, 16);
  put_us(d, DCM_BitsStored, 16);
  put_us(d, DCM_HighBit, 15);
  put_us(d, DCM_PixelRepresentation, 1);
  put(d, DCM_KVP, "");
  put(d, DCM_AcquisitionNumber, "");
  put(d, DCM_RescaleIntercept, "0");
  put(d, DCM_RescaleSlope, "1");
  put(d, DCM_RescaleType, "HU");
  // VOI LUT: a soft-tissue window.
  put(d, DCM_WindowCenter, "40");
  put(d, DCM_WindowWidth, "400");
}

std::string file_name(size_t k) {
  std::string number = std::to_string(k + 1);
  if (number.size() < 4) number.insert(0, 4 - number.size(), '0');
  return number + ".dcm";
}

}  // namespace

WrittenSeries write_image_series(const std::string& folder, const float* values, const DicomSeries& on,
                                 const ImageSeriesInfo& info) {
  const Grid& g = on.grid;
  if (values == nullptr) throw std::invalid_argument("write_image_series: no values for " + folder);
  if (on.slices.empty() || on.frame_of_reference_uid.empty() || on.study_uid.empty())
    throw std::invalid_argument("write_image_series: the series " + on.folder + " lacks slices or UIDs");
  if (g.size[2] != int64_t(on.slices.size()) || g.size[0] < 1 || g.size[1] < 1 || g.size[0] > 65535 ||
      g.size[1] > 65535)
    throw std::invalid_argument("write_image_series: the series " + on.folder + " has " +
                                std::to_string(on.slices.size()) + " slices of " + std::to_string(g.size[1]) +
                                " rows and " + std::to_string(g.size[0]) + " columns for a grid of " +
                                std::to_string(g.size[2]) + " slices");
  const std::string path = check_folder(folder);

  WrittenSeries out;
  out.series_uid = detail::new_uid(true);
  DcmFileFormat file;
  DcmDataset& d = *file.getDataset();
  put_common(d, on, info, out.series_uid, source_header(on), date_and_time());

  const size_t per_slice = size_t(g.size[0]) * size_t(g.size[1]);
  std::vector<Sint16> pixels(per_slice);
  base::write_atomically(path, [&](const std::string& tmp) {
    std::error_code ec;
    if (!fs::create_directory(tmp, ec) || ec)
      throw base::WriteError(folder + ": cannot create the temporary folder " + tmp + " (" +
                             (ec ? ec.message() : std::string("it exists")) + ")");
    for (size_t k = 0; k < on.slices.size(); ++k) {
      const float* slice = values + k * per_slice;
      for (size_t v = 0; v < per_slice; ++v) {
        const double value = slice[v];
        if (!std::isfinite(value))
          throw std::invalid_argument("write_image_series: slice " + std::to_string(k + 1) + " of " +
                                      std::to_string(on.slices.size()) + " has a value that is not finite (" +
                                      std::to_string(value) + " at column " + std::to_string(v % size_t(g.size[0])) +
                                      ", row " + std::to_string(v / size_t(g.size[0])) + ")");
        double stored = std::nearbyint(value);
        if (stored < -32768 || stored > 32767) {
          stored = stored < 0 ? -32768 : 32767;
          ++out.clipped;
        } else {
          out.largest_rounding = std::max(out.largest_rounding, std::fabs(value - stored));
        }
        pixels[v] = Sint16(stored);
      }
      const Slice& s = on.slices[k];
      put(d, DCM_SOPInstanceUID, detail::new_uid(false));
      put(d, DCM_InstanceNumber, std::to_string(k + 1));
      put(d, DCM_ImagePositionPatient, ds_list({s.position[0], s.position[1], s.position[2]}));
      // OW, as signed 16-bit words (PixelRepresentation 1): the same bytes.
      const OFCondition set = d.putAndInsertUint16Array(
          DCM_PixelData, reinterpret_cast<const Uint16*>(pixels.data()), static_cast<unsigned long>(per_slice));
      if (set.bad()) throw std::runtime_error("write_image_series: cannot set the pixel data: " + std::string(set.text()));
      const std::string name = (fs::path(tmp) / file_name(k)).string();
      // The meta header follows each slice's SOP instance UID.
      file.getMetaInfo()->clear();
      const OFCondition status = file.saveFile(name.c_str(), EXS_LittleEndianExplicit);
      if (status.bad())
        throw base::WriteError(folder + ": cannot write " + file_name(k) + " (" + std::string(status.text()) + ")");
      ++out.files;
    }
  });
  return out;
}

}  // namespace autoreg::rt
