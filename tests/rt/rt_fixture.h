// Synthetic DICOM for rt/'s tests, made with DCMTK: a CT series of a few small slices
// (pixel data zeros) written in shuffled file order, and closed polygons to build
// structure sets from.
#pragma once

#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "autoreg/rt/errors.h"
#include "autoreg/rt/rasterise.h"
#include "autoreg/rt/series.h"
#include "autoreg/rt/structure_set.h"

namespace autoreg::rt::test {

namespace fs = std::filesystem;

// The message of what `f` throws as DicomError ("" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const DicomError& e) {
    return e.what();
  }
  return "";
}
using Point = std::array<double, 3>;

// A fresh folder under the temporary directory, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("autoreg-rt-" + name + "-" + std::to_string(::getpid()) + "-" + (info ? info->name() : "x"));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// What the synthetic series looks like. Defaults: 40 columns × 32 rows × 12 slices,
// PixelSpacing 1.25 (between rows) \ 1.5 (between columns), 3 mm apart, axial.
struct SeriesSpec {
  int columns = 40, rows = 32, slices = 12;
  double row_spacing = 1.25, column_spacing = 1.5, slice_gap = 3;
  Point origin{-30.5, 12.25, -100};
  std::array<double, 6> orientation{1, 0, 0, 0, 1, 0};
  std::string series_uid = "1.2.826.0.1.3680043.9.7777.1.1";
  std::string frame_uid = "1.2.826.0.1.3680043.9.7777.2.1";
  std::string study_uid = "1.2.826.0.1.3680043.9.7777.3.1";
  bool frame_of_reference = true;  // false: no FrameOfReferenceUID (an error)
  std::vector<int> skip;           // slice numbers left out (a missing slice)
};

inline std::string ds(const std::vector<double>& values) {
  std::ostringstream out;
  out.precision(12);
  for (size_t i = 0; i < values.size(); ++i) out << (i ? "\\" : "") << values[i];
  return out.str();
}

inline Point normal_of(const SeriesSpec& s) {
  const auto& o = s.orientation;
  return {o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
}

// The ImagePositionPatient of slice k.
inline Point slice_position(const SeriesSpec& s, int k) {
  const Point n = normal_of(s);
  return {s.origin[0] + k * s.slice_gap * n[0], s.origin[1] + k * s.slice_gap * n[1], s.origin[2] + k * s.slice_gap * n[2]};
}

inline std::string slice_uid(const SeriesSpec& s, int k) { return s.series_uid + ".100." + std::to_string(k + 1); }

// Writes one CT slice file.
inline void write_slice(const SeriesSpec& s, int k, const std::string& path) {
  DcmFileFormat file;
  DcmDataset& d = *file.getDataset();
  const Point p = slice_position(s, k);
  d.putAndInsertString(DCM_SOPClassUID, UID_CTImageStorage);
  d.putAndInsertString(DCM_SOPInstanceUID, slice_uid(s, k).c_str());
  d.putAndInsertString(DCM_Modality, "CT");
  d.putAndInsertString(DCM_PatientName, "Test^Phantom");
  d.putAndInsertString(DCM_PatientID, "RT-0001");
  d.putAndInsertString(DCM_PatientBirthDate, "19700101");
  d.putAndInsertString(DCM_PatientSex, "O");
  d.putAndInsertString(DCM_StudyInstanceUID, s.study_uid.c_str());
  d.putAndInsertString(DCM_StudyDate, "20260102");
  d.putAndInsertString(DCM_StudyTime, "101500");
  d.putAndInsertString(DCM_StudyID, "S1");
  d.putAndInsertString(DCM_AccessionNumber, "A1");
  d.putAndInsertString(DCM_ReferringPhysicianName, "");
  d.putAndInsertString(DCM_SeriesInstanceUID, s.series_uid.c_str());
  d.putAndInsertString(DCM_SeriesNumber, "2");
  if (s.frame_of_reference) d.putAndInsertString(DCM_FrameOfReferenceUID, s.frame_uid.c_str());
  d.putAndInsertString(DCM_InstanceNumber, std::to_string(k + 1).c_str());
  d.putAndInsertString(DCM_ImagePositionPatient, ds({p[0], p[1], p[2]}).c_str());
  d.putAndInsertString(DCM_ImageOrientationPatient,
                       ds({s.orientation.begin(), s.orientation.end()}).c_str());
  d.putAndInsertString(DCM_PixelSpacing, ds({s.row_spacing, s.column_spacing}).c_str());
  d.putAndInsertString(DCM_SliceThickness, ds({s.slice_gap}).c_str());
  d.putAndInsertUint16(DCM_Rows, Uint16(s.rows));
  d.putAndInsertUint16(DCM_Columns, Uint16(s.columns));
  d.putAndInsertUint16(DCM_SamplesPerPixel, 1);
  d.putAndInsertString(DCM_PhotometricInterpretation, "MONOCHROME2");
  d.putAndInsertUint16(DCM_BitsAllocated, 16);
  d.putAndInsertUint16(DCM_BitsStored, 16);
  d.putAndInsertUint16(DCM_HighBit, 15);
  d.putAndInsertUint16(DCM_PixelRepresentation, 1);
  d.putAndInsertString(DCM_RescaleIntercept, "0");
  d.putAndInsertString(DCM_RescaleSlope, "1");
  std::vector<Uint16> pixels(size_t(s.rows) * s.columns, 0);
  d.putAndInsertUint16Array(DCM_PixelData, pixels.data(), pixels.size());
  ASSERT_TRUE(file.saveFile(path.c_str(), EXS_LittleEndianExplicit).good()) << path;
}

// Writes the series into `folder`, file names in an order other than the slices'.
inline void write_series(const SeriesSpec& s, const fs::path& folder) {
  fs::create_directories(folder);
  for (int k = 0; k < s.slices; ++k) {
    if (std::find(s.skip.begin(), s.skip.end(), k) != s.skip.end()) continue;
    const int shuffled = (k * 7 + 3) % s.slices;  // 7 is prime to 12: a permutation
    write_slice(s, k, (folder / ("img" + std::to_string(100 + shuffled) + ".dcm")).string());
  }
}

// A closed polygon of `n` points on a circle, in the plane of slice k of the axial series.
inline Contour circle(const SeriesSpec& s, int k, double cx, double cy, double radius, int n = 64) {
  Contour c;
  const Point p = slice_position(s, k);
  for (int i = 0; i < n; ++i) {
    const double a = 2 * M_PI * i / n;
    c.points.push_back({cx + radius * std::cos(a), cy + radius * std::sin(a), p[2]});
  }
  c.referenced_sop_instance_uid = slice_uid(s, k);
  return c;
}

inline Contour box(const SeriesSpec& s, int k, double x0, double y0, double x1, double y1) {
  Contour c;
  const double z = slice_position(s, k)[2];
  c.points = {{x0, y0, z}, {x1, y0, z}, {x1, y1, z}, {x0, y1, z}};
  c.referenced_sop_instance_uid = slice_uid(s, k);
  return c;
}

// The physical x, y of voxel (i, j) of the axial series.
inline double x_of(const SeriesSpec& s, double i) { return s.origin[0] + i * s.column_spacing; }
inline double y_of(const SeriesSpec& s, double j) { return s.origin[1] + j * s.row_spacing; }

// The structures of the tests: "Disk" (r 12 mm on slices 2..5), "Ring" (an annulus
// r 12/6 mm on slice 7 and two islands r 5 mm on slice 8), "Box" (slices 3..9, 9 × 6
// voxel centres per slice).
inline std::vector<Roi> test_rois(const SeriesSpec& s) {
  const double cx = x_of(s, 19.7), cy = y_of(s, 15.4);
  Roi disk{1, "Disk", {255, 0, 0}, "MANUAL", "ORGAN", s.frame_uid, {}};
  for (int k = 2; k <= 5; ++k) disk.contours.push_back(circle(s, k, cx, cy, 12));
  Roi ring{2, "Ring", {0, 200, 0}, "MANUAL", "", s.frame_uid, {}};
  ring.contours.push_back(circle(s, 7, cx, cy, 12));
  ring.contours.push_back(circle(s, 7, cx, cy, 6, 40));
  ring.contours.push_back(circle(s, 8, cx - 10, cy, 5));
  ring.contours.push_back(circle(s, 8, cx + 10, cy, 5));
  Roi square{7, "Box", {0, 0, 255}, "MANUAL", "PTV", s.frame_uid, {}};
  for (int k = 3; k <= 9; ++k) square.contours.push_back(box(s, k, x_of(s, 5.3), y_of(s, 4.2), x_of(s, 14.7), y_of(s, 10.6)));
  return {disk, ring, square};
}

inline int64_t count(const std::vector<uint8_t>& mask) {
  int64_t n = 0;
  for (auto v : mask) n += v;
  return n;
}

// Voxels inside on slice k.
inline int64_t count_slice(const std::vector<uint8_t>& mask, const Grid& g, int64_t k) {
  int64_t n = 0;
  const int64_t per = g.size[0] * g.size[1];
  for (int64_t v = k * per; v < (k + 1) * per; ++v) n += mask[size_t(v)];
  return n;
}

inline double dice(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int64_t both = 0, sum = 0;
  for (size_t v = 0; v < a.size(); ++v) both += a[v] && b[v], sum += a[v] + b[v];
  return sum == 0 ? 1.0 : 2.0 * double(both) / double(sum);
}

}  // namespace autoreg::rt::test
