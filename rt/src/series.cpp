// A DICOM series' folder read to the grid ITK's GDCM series reader gives (series.h).
#include "autoreg/rt/series.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK asks
#include <dcmtk/dcmdata/dcdeftag.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "dicom_attributes.h"

namespace autoreg::rt {
namespace {

namespace fs = std::filesystem;
using Vec = std::array<double, 3>;

// One file's header, as far as the grid and the copied modules need it.
struct Header {
  Slice slice;
  std::string study_uid, series_uid, frame_uid, modality;
  Vec row{}, column{};
  double row_spacing = 0, column_spacing = 0;  // PixelSpacing's two values, in its order
  int rows = 0, columns = 0;
  double thickness = 0;  // SliceThickness, the spacing of a series of one slice
  PatientStudy patient;
};

double dot(const Vec& a, const Vec& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec cross(const Vec& a, const Vec& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
Vec minus(const Vec& a, const Vec& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }

std::string show(const std::vector<double>& v) {
  std::ostringstream out;
  for (size_t i = 0; i < v.size(); ++i) out << (i ? "\\" : "") << v[i];
  return out.str();
}

PatientStudy patient_study(DcmItem& d) {
  using detail::text;
  return {text(d, DCM_PatientName), text(d, DCM_PatientID), text(d, DCM_PatientBirthDate),
          text(d, DCM_PatientSex), text(d, DCM_StudyDate), text(d, DCM_StudyTime), text(d, DCM_StudyID),
          text(d, DCM_AccessionNumber), text(d, DCM_ReferringPhysicianName), text(d, DCM_StudyDescription),
          text(d, DCM_SpecificCharacterSet)};
}

// The file's header, or nothing (and a note) for a file that is no image slice.
std::optional<Header> read_header(const std::string& path, std::vector<std::string>& notes) {
  std::unique_ptr<DcmFileFormat> file;
  try {
    file = detail::load(path, /*headers_only=*/true);
  } catch (const DicomError&) {
    if (detail::has_dicom_preamble(path)) throw;  // a DICOM file that is broken: say so
    notes.push_back(path + ": not DICOM, skipped");
    return std::nullopt;
  }
  DcmDataset& d = *file->getDataset();
  Header h;
  h.slice.file = path;
  h.slice.sop_instance_uid = detail::text(d, DCM_SOPInstanceUID);
  h.slice.sop_class_uid = detail::text(d, DCM_SOPClassUID);
  h.modality = detail::text(d, DCM_Modality);
  const auto position = detail::numbers(d, DCM_ImagePositionPatient, path, "ImagePositionPatient");
  const auto orientation = detail::numbers(d, DCM_ImageOrientationPatient, path, "ImageOrientationPatient");
  if (h.slice.sop_instance_uid.empty() || position.empty() || orientation.empty()) {
    notes.push_back(path + ": no image plane (" + (h.modality.empty() ? "no modality" : h.modality) + "), skipped");
    return std::nullopt;
  }
  const auto frames = detail::numbers(d, DCM_NumberOfFrames, path, "NumberOfFrames");
  if (!frames.empty() && frames[0] > 1) detail::fail(path, "is a multi-frame image; give a series of single slices");
  if (position.size() != 3) detail::fail(path, "ImagePositionPatient has " + std::to_string(position.size()) + " values, not 3");
  if (orientation.size() != 6)
    detail::fail(path, "ImageOrientationPatient has " + std::to_string(orientation.size()) + " values, not 6");
  const auto spacing = detail::numbers(d, DCM_PixelSpacing, path, "PixelSpacing");
  if (spacing.size() != 2 || !(spacing[0] > 0) || !(spacing[1] > 0))
    detail::fail(path, "PixelSpacing '" + show(spacing) + "' is not two positive numbers");
  Uint16 rows = 0, columns = 0;
  d.findAndGetUint16(DCM_Rows, rows);
  d.findAndGetUint16(DCM_Columns, columns);
  if (rows == 0 || columns == 0) detail::fail(path, "has no Rows or Columns");
  h.study_uid = detail::text(d, DCM_StudyInstanceUID);
  h.series_uid = detail::text(d, DCM_SeriesInstanceUID);
  h.frame_uid = detail::text(d, DCM_FrameOfReferenceUID);
  if (h.series_uid.empty()) detail::fail(path, "has no SeriesInstanceUID");
  if (h.frame_uid.empty())
    detail::fail(path, "has no FrameOfReferenceUID: its positions cannot be related to contours or other scans");
  h.slice.position = {position[0], position[1], position[2]};
  h.row = {orientation[0], orientation[1], orientation[2]};
  h.column = {orientation[3], orientation[4], orientation[5]};
  const double row_norm = std::sqrt(dot(h.row, h.row)), column_norm = std::sqrt(dot(h.column, h.column));
  if (std::fabs(row_norm - 1) > 1e-3 || std::fabs(column_norm - 1) > 1e-3 || std::fabs(dot(h.row, h.column)) > 1e-3)
    detail::fail(path, "ImageOrientationPatient '" + show(orientation) + "' is not two orthogonal unit vectors");
  for (int c = 0; c < 3; ++c) h.row[c] /= row_norm, h.column[c] /= column_norm;
  h.row_spacing = spacing[0];
  h.column_spacing = spacing[1];
  h.rows = rows;
  h.columns = columns;
  const auto thickness = detail::numbers(d, DCM_SliceThickness, path, "SliceThickness");
  h.thickness = thickness.empty() ? 0 : thickness[0];
  h.patient = patient_study(d);
  return h;
}

// Every slice in the first one's series, frame of reference, orientation and size.
void check_alike(const std::string& folder, const std::vector<Header>& headers) {
  const Header& a = headers.front();
  std::map<std::string, const Header*> series;
  for (const Header& h : headers) series.emplace(h.series_uid, &h);
  if (series.size() > 1) {
    const Header* other = std::next(series.begin())->second;
    const Header* one = series.begin()->second;
    detail::fail(folder, "holds " + std::to_string(series.size()) + " series, not one: " + one->series_uid + " (" +
                             one->slice.file + ") and " + other->series_uid + " (" + other->slice.file +
                             "); give a folder with one series");
  }
  for (const Header& h : headers) {
    const auto& f = h.slice.file;
    if (h.frame_uid != a.frame_uid)
      detail::fail(f, "FrameOfReferenceUID " + h.frame_uid + " differs from " + a.frame_uid + " of " + a.slice.file);
    if (std::fabs(dot(h.row, a.row) - 1) > 1e-6 || std::fabs(dot(h.column, a.column) - 1) > 1e-6)
      detail::fail(f, "ImageOrientationPatient differs from that of " + a.slice.file + " (slices of one series must be parallel)");
    if (std::fabs(h.row_spacing - a.row_spacing) > 1e-6 * a.row_spacing ||
        std::fabs(h.column_spacing - a.column_spacing) > 1e-6 * a.column_spacing)
      detail::fail(f, "PixelSpacing differs from that of " + a.slice.file);
    if (h.rows != a.rows || h.columns != a.columns)
      detail::fail(f, "is " + std::to_string(h.columns) + "x" + std::to_string(h.rows) + " pixels, " + a.slice.file +
                          " is " + std::to_string(a.columns) + "x" + std::to_string(a.rows));
  }
}

// Sorts the slices along the normal and returns the slice spacing, after checking that
// they are stacked along it, one per position, evenly.
double sort_and_space(const std::string& folder, std::vector<Header>& headers, const Vec& normal) {
  std::stable_sort(headers.begin(), headers.end(), [&](const Header& x, const Header& y) {
    return dot(x.slice.position, normal) < dot(y.slice.position, normal);
  });
  const Header& first = headers.front();
  const double in_plane_tolerance = 1e-3 + 0.01 * std::min(first.row_spacing, first.column_spacing);
  std::vector<double> gaps;
  for (size_t k = 0; k < headers.size(); ++k) {
    const Vec offset = minus(headers[k].slice.position, first.slice.position);
    const double along = dot(offset, normal);
    const Vec across = {offset[0] - along * normal[0], offset[1] - along * normal[1], offset[2] - along * normal[2]};
    if (std::sqrt(dot(across, across)) > in_plane_tolerance)
      detail::fail(headers[k].slice.file, "is not stacked along the slice normal of " + first.slice.file + " (off by " +
                                              std::to_string(std::sqrt(dot(across, across))) + " mm in plane: a tilted gantry?)");
    if (k == 0) continue;
    const double gap = dot(minus(headers[k].slice.position, headers[k - 1].slice.position), normal);
    if (gap < 1e-3)
      detail::fail(folder, "two slices at one position (" + std::to_string(dot(headers[k].slice.position, normal)) +
                               " mm along the normal): " + headers[k - 1].slice.file + " and " + headers[k].slice.file);
    gaps.push_back(gap);
  }
  if (gaps.empty()) return 0;
  std::vector<double> sorted = gaps;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double median = sorted[sorted.size() / 2];
  for (size_t k = 0; k < gaps.size(); ++k)
    if (std::fabs(gaps[k] - median) > 0.01 * median)
      detail::fail(folder, "uneven slice spacing: " + std::to_string(gaps[k]) + " mm between " + headers[k].slice.file +
                               " and " + headers[k + 1].slice.file + " where the median gap is " +
                               std::to_string(median) + " mm" + (gaps[k] > median ? " (a missing slice?)" : ""));
  // ITK's: first to last over their count less one.
  return dot(minus(headers.back().slice.position, first.slice.position), normal) / double(headers.size() - 1);
}

}  // namespace

DicomSeries read_series(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) detail::fail(folder, "is not a folder (give the folder of the series' files)");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') files.push_back(entry.path().string());
  if (ec) detail::fail(folder, "cannot be listed (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  DicomSeries series;
  series.folder = folder;
  std::vector<Header> headers;
  for (const auto& f : files)
    if (auto h = read_header(f, series.notes)) headers.push_back(std::move(*h));
  if (headers.empty())
    detail::fail(folder, "holds no DICOM image slice (" + std::to_string(files.size()) + " files looked at)");
  check_alike(folder, headers);
  const Vec normal = cross(headers.front().row, headers.front().column);
  double slice_spacing = sort_and_space(folder, headers, normal);
  const Header& first = headers.front();
  if (headers.size() == 1) slice_spacing = first.thickness > 0 ? first.thickness : 1.0;

  series.study_uid = first.study_uid;
  series.series_uid = first.series_uid;
  series.frame_of_reference_uid = first.frame_uid;
  series.modality = first.modality;
  series.patient = first.patient;
  Grid& g = series.grid;
  g.size = {first.columns, first.rows, int64_t(headers.size())};
  g.spacing = {first.column_spacing, first.row_spacing, slice_spacing};
  g.origin = first.slice.position;
  for (int r = 0; r < 3; ++r) {
    g.direction[r * 3 + 0] = first.row[r];
    g.direction[r * 3 + 1] = first.column[r];
    g.direction[r * 3 + 2] = normal[r];
  }
  for (auto& h : headers) series.slices.push_back(std::move(h.slice));
  return series;
}

}  // namespace autoreg::rt
