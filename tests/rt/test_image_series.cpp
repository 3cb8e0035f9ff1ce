// A volume written as a CT image series on a series' grid (rt/image_series.h): read back
// by read_series and DCMTK (geometry, UIDs, every voxel), refusals, nothing left behind
// after a failure, and dciodvfy (Debian's dicom3tools) when installed.
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>

#include <dcmtk/dcmdata/dcmetinf.h>

#include "autoreg/base/atomic_file.h"
#include "autoreg/rt/image_series.h"
#include "rt_fixture.h"
#include "shared_data.h"

namespace autoreg::rt::test {
namespace {

constexpr const char* kDciodvfy = "/usr/bin/dciodvfy";

// A ramp from -1000.4 to 2000.6 over the voxels, and one voxel of 40000 (clamped).
std::vector<float> ramp(const Grid& g, int64_t clamped_voxel) {
  const int64_t n = voxel_count(g);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(-1000.4 + 3001.0 * double(i) / double(n - 1));
  v[size_t(clamped_voxel)] = 40000.0f;
  return v;
}

// The value stored for `v`: rounded to the nearest integer, clamped to 16 bits signed.
int expected(float v) { return int(std::min(32767.0, std::max(-32768.0, std::nearbyint(double(v))))); }

// The slice's pixel values in HU, read with DCMTK (PixelData and the rescale).
std::vector<double> read_pixels(const std::string& path) {
  DcmFileFormat file;
  EXPECT_TRUE(file.loadFile(path.c_str()).good()) << path;
  DcmDataset& d = *file.getDataset();
  Uint16 bits = 0, representation = 0;
  EXPECT_TRUE(d.findAndGetUint16(DCM_BitsAllocated, bits).good());
  EXPECT_TRUE(d.findAndGetUint16(DCM_PixelRepresentation, representation).good());
  EXPECT_EQ(bits, 16);
  EXPECT_EQ(representation, 1);
  Float64 slope = 0, intercept = 1;
  EXPECT_TRUE(d.findAndGetFloat64(DCM_RescaleSlope, slope).good());
  EXPECT_TRUE(d.findAndGetFloat64(DCM_RescaleIntercept, intercept).good());
  const Uint16* words = nullptr;
  unsigned long count = 0;
  EXPECT_TRUE(d.findAndGetUint16Array(DCM_PixelData, words, &count).good());
  std::vector<double> out;
  for (unsigned long i = 0; i < count; ++i) out.push_back(double(Sint16(words[i])) * slope + intercept);
  return out;
}

std::string text_of(const std::string& path, const DcmTagKey& tag) {
  DcmFileFormat file;
  EXPECT_TRUE(file.loadFile(path.c_str()).good()) << path;
  OFString value;
  if (tag.getGroup() == 0x0002)
    file.getMetaInfo()->findAndGetOFStringArray(tag, value);
  else
    file.getDataset()->findAndGetOFStringArray(tag, value);
  return value.c_str();
}

// dciodvfy's report on a file (stdout and stderr).
std::string dciodvfy(const std::string& path) {
  std::string out;
  FILE* pipe = ::popen(("'" + std::string(kDciodvfy) + "' '" + path + "' 2>&1").c_str(), "r");
  if (pipe == nullptr) return "cannot run dciodvfy";
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

int errors_in(const std::string& report) {
  std::istringstream lines(report);
  int errors = 0;
  for (std::string line; std::getline(lines, line);) errors += line.rfind("Error", 0) == 0;
  return errors;
}

// Entries of `folder` named as base/'s temporaries.
int temporaries_in(const fs::path& folder) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(folder))
    n += entry.path().filename().string().rfind(".autoreg-tmp-", 0) == 0;
  return n;
}

void expect_same_grid(const Grid& a, const Grid& b) {
  EXPECT_EQ(a.size, b.size);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(a.spacing[c], b.spacing[c], 1e-6) << c;
    EXPECT_NEAR(a.origin[c], b.origin[c], 1e-6) << c;
  }
  for (int c = 0; c < 9; ++c) EXPECT_NEAR(a.direction[c], b.direction[c], 1e-9) << c;
}

TEST(RtImageSeries, RoundTripsEveryVoxelOnTheSeriesGeometry) {
  TempDir dir("image-series");
  const SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  const DicomSeries on = read_series(dir / "ct");
  const Grid& g = on.grid;
  const int64_t clamped = 5 + g.size[0] * (7 + g.size[1] * 4);  // (5, 7, 4)
  const std::vector<float> values = ramp(g, clamped);
  ImageSeriesInfo info;
  info.series_description = std::string(70, 'D');
  info.source_series_uid = "1.2.826.0.1.3680043.9.7777.9.9";
  info.software_version = "autoreg test";
  const WrittenSeries out = write_image_series(dir / "warped", values.data(), on, info);
  EXPECT_EQ(out.files, spec.slices);
  EXPECT_EQ(out.clipped, 1);
  EXPECT_GT(out.largest_rounding, 0.3);
  EXPECT_LE(out.largest_rounding, 0.5);
  EXPECT_FALSE(out.series_uid.empty());
  EXPECT_EQ(temporaries_in(dir.path()), 0);

  const DicomSeries back = read_series(dir / "warped");
  EXPECT_TRUE(back.notes.empty());
  expect_same_grid(back.grid, g);
  EXPECT_EQ(back.frame_of_reference_uid, on.frame_of_reference_uid);
  EXPECT_EQ(back.study_uid, on.study_uid);
  EXPECT_EQ(back.series_uid, out.series_uid);
  EXPECT_NE(back.series_uid, on.series_uid);
  EXPECT_EQ(back.modality, "CT");
  EXPECT_EQ(back.patient.patient_name, on.patient.patient_name);
  EXPECT_EQ(back.patient.patient_id, on.patient.patient_id);
  EXPECT_EQ(back.patient.study_date, on.patient.study_date);
  ASSERT_EQ(back.slices.size(), on.slices.size());
  std::set<std::string> uids;
  for (size_t k = 0; k < back.slices.size(); ++k) {
    const Slice& s = back.slices[k];
    char name[16];
    std::snprintf(name, sizeof name, "%04zu.dcm", k + 1);
    EXPECT_EQ(fs::path(s.file).filename().string(), name);  // files in slice order
    EXPECT_EQ(s.sop_class_uid, UID_CTImageStorage);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(s.position[c], on.slices[k].position[c], 1e-6);
    EXPECT_NE(s.sop_instance_uid, on.slices[k].sop_instance_uid);
    uids.insert(s.sop_instance_uid);
    EXPECT_EQ(text_of(s.file, DCM_InstanceNumber), std::to_string(k + 1));

    const std::vector<double> hu = read_pixels(s.file);
    const size_t per = size_t(g.size[0] * g.size[1]);
    ASSERT_EQ(hu.size(), per);
    int wrong = 0;
    for (size_t v = 0; v < per; ++v) {
      const size_t index = k * per + v;
      const double want = expected(values[index]);
      if (hu[v] != want || std::fabs(hu[v] - values[index]) > 0.5 + (int64_t(index) == clamped ? 1e9 : 0)) ++wrong;
    }
    EXPECT_EQ(wrong, 0) << "slice " << k + 1;
  }
  EXPECT_EQ(uids.size(), back.slices.size());
  EXPECT_EQ(read_pixels(back.slices[4].file)[size_t(5 + g.size[0] * 7)], 32767.0);

  const std::string first = back.slices.front().file;
  EXPECT_EQ(text_of(first, DCM_TransferSyntaxUID), UID_LittleEndianExplicitTransferSyntax);
  EXPECT_EQ(text_of(first, DCM_MediaStorageSOPInstanceUID), back.slices.front().sop_instance_uid);
  EXPECT_EQ(text_of(first, DCM_SeriesDescription), std::string(64, 'D'));
  EXPECT_EQ(text_of(first, DCM_ImageType), "DERIVED\\SECONDARY\\AXIAL");
  EXPECT_EQ(text_of(first, DCM_RescaleType), "HU");
  EXPECT_EQ(text_of(first, DCM_SeriesNumber), "901");
  EXPECT_EQ(text_of(first, DCM_Manufacturer), "autoreg");
  EXPECT_EQ(text_of(first, DCM_SoftwareVersions), "autoreg test");
  EXPECT_NE(text_of(first, DCM_DerivationDescription).find(info.source_series_uid), std::string::npos);
  EXPECT_EQ(text_of(first, DCM_PixelSpacing), "1.25\\1.5");  // between rows, then columns
}

// An oblique, non-axial series (coronal, tilted): the direction columns and slice
// positions survive.
TEST(RtImageSeries, KeepsAnObliqueOrientation) {
  TempDir dir("image-series-oblique");
  SeriesSpec spec;
  const double c = std::cos(0.3), s = std::sin(0.3);
  spec.orientation = {c, s, 0, 0, 0, -1};
  spec.slices = 5;
  write_series(spec, dir.path() / "ct");
  const DicomSeries on = read_series(dir / "ct");
  const std::vector<float> values(size_t(voxel_count(on.grid)), -12.0f);
  write_image_series(dir / "warped", values.data(), on, {});
  const DicomSeries back = read_series(dir / "warped");
  expect_same_grid(back.grid, on.grid);
  for (size_t k = 0; k < back.slices.size(); ++k)
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(back.slices[k].position[a], on.slices[k].position[a], 1e-6);
}

TEST(RtImageSeries, WritesIntoAnEmptyFolderAndRefusesOthers) {
  TempDir dir("image-series-refuse");
  const SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  const DicomSeries on = read_series(dir / "ct");
  const std::vector<float> values(size_t(voxel_count(on.grid)), 0.0f);
  // Not empty: refused, naming the folder, its file untouched.
  fs::create_directories(dir.path() / "full");
  std::ofstream(dir / "full/keep.txt") << "keep";
  try {
    write_image_series(dir / "full", values.data(), on, {});
    ADD_FAILURE() << "a folder that is not empty was written into";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path() / "full"), fs::directory_iterator()), 1);
  // A file: refused.
  std::ofstream(dir / "file.dcm") << "x";
  EXPECT_THROW(write_image_series(dir / "file.dcm", values.data(), on, {}), std::invalid_argument);
  // Values missing, or a grid that does not match the slices.
  EXPECT_THROW(write_image_series(dir / "none", nullptr, on, {}), std::invalid_argument);
  DicomSeries short_series = on;
  short_series.slices.pop_back();
  EXPECT_THROW(write_image_series(dir / "short", values.data(), short_series, {}), std::invalid_argument);
  // A folder whose parent is missing: cannot be written.
  EXPECT_THROW(write_image_series(dir / "missing/warped", values.data(), on, {}), base::WriteError);
  EXPECT_FALSE(fs::exists(dir.path() / "missing"));
  EXPECT_FALSE(fs::exists(dir.path() / "none"));
  EXPECT_FALSE(fs::exists(dir.path() / "short"));
  // An empty folder (named with a trailing slash): written into.
  fs::create_directories(dir.path() / "empty");
  const WrittenSeries out = write_image_series(dir / "empty/", values.data(), on, {});
  EXPECT_EQ(out.files, spec.slices);
  EXPECT_EQ(out.clipped, 0);
  EXPECT_EQ(out.largest_rounding, 0.0);
  EXPECT_EQ(read_series(dir / "empty").slices.size(), size_t(spec.slices));
  EXPECT_EQ(temporaries_in(dir.path()), 0);
}

TEST(RtImageSeries, LeavesNothingBehindAfterAFailure) {
  TempDir dir("image-series-nan");
  const SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  const DicomSeries on = read_series(dir / "ct");
  std::vector<float> values(size_t(voxel_count(on.grid)), 10.0f);
  values.back() = std::numeric_limits<float>::quiet_NaN();  // the last slice's last voxel
  try {
    write_image_series(dir / "warped", values.data(), on, {});
    ADD_FAILURE() << "a NaN was written";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("slice 12"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "warped"));
  EXPECT_EQ(temporaries_in(dir.path()), 0);
  // An empty folder given stays as it was.
  fs::create_directories(dir.path() / "empty");
  values[0] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(write_image_series(dir / "empty", values.data(), on, {}), std::invalid_argument);
  EXPECT_TRUE(fs::is_directory(dir.path() / "empty"));
  EXPECT_TRUE(fs::is_empty(dir.path() / "empty"));
  EXPECT_EQ(temporaries_in(dir.path()), 0);
}

TEST(RtImageSeries, DciodvfyFindsNoError) {
  if (!fs::exists(kDciodvfy)) GTEST_SKIP() << "no " << kDciodvfy << " (Debian's dicom3tools)";
  TempDir dir("image-series-dciodvfy");
  const SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  const DicomSeries on = read_series(dir / "ct");
  const std::vector<float> values = ramp(on.grid, 0);
  write_image_series(dir / "warped", values.data(), on, {});
  const std::string report = dciodvfy(dir / "warped/0001.dcm");
  std::printf("dciodvfy on a slice written on the synthetic series:\n%s", report.c_str());
  EXPECT_EQ(errors_in(report), 0) << report;
}

// The shared CBCT series: a volume written on its grid reads back on the same grid and
// frame of reference, and dciodvfy finds no error. $AUTOREG_RT_TEST_KEEP (a folder),
// when set, keeps the first written slice for other readers.
TEST(RtImageSeries, OnTheSharedCbct) {
  const fs::path cbct = autoreg::test::shared_data() / "ct_cbct" / "dicom" / "cbct02";
  if (!fs::exists(cbct)) GTEST_SKIP() << "no shared DICOM data at " << cbct;
  const DicomSeries on = read_series(cbct.string());
  const Grid& g = on.grid;
  std::vector<float> values(size_t(voxel_count(g)), 0.0f);
  for (int64_t k = g.size[2] / 3; k < 2 * g.size[2] / 3; ++k)
    for (int64_t j = 200; j < 300; ++j)
      for (int64_t i = 150; i < 350; ++i) values[size_t(i + g.size[0] * (j + g.size[1] * k))] = 50.0f;
  TempDir dir("image-series-cbct");
  ImageSeriesInfo info;
  info.software_version = "test";
  const WrittenSeries out = write_image_series(dir / "warped", values.data(), on, info);
  EXPECT_EQ(out.files, int(on.slices.size()));
  const DicomSeries back = read_series(dir / "warped");
  expect_same_grid(back.grid, g);
  EXPECT_EQ(back.frame_of_reference_uid, on.frame_of_reference_uid);
  EXPECT_EQ(back.study_uid, on.study_uid);
  EXPECT_EQ(back.patient.specific_character_set, on.patient.specific_character_set);
  const std::string first = back.slices.front().file;
  EXPECT_EQ(text_of(first, DCM_PatientPosition), text_of(on.slices.front().file, DCM_PatientPosition));
  const int64_t middle = g.size[2] / 2;
  const std::vector<double> hu = read_pixels(back.slices[size_t(middle)].file);
  EXPECT_EQ(hu[size_t(250 + g.size[0] * 250)], 50.0);
  EXPECT_EQ(hu[0], 0.0);
  if (const char* keep = std::getenv("AUTOREG_RT_TEST_KEEP"); keep && *keep)
    fs::copy_file(first, fs::path(keep) / "ct_on_cbct_0001.dcm", fs::copy_options::overwrite_existing);
  if (!fs::exists(kDciodvfy)) GTEST_SKIP() << "no " << kDciodvfy << " (Debian's dicom3tools)";
  const std::string report = dciodvfy(first);
  std::printf("dciodvfy on %s:\n%s", first.c_str(), report.c_str());
  EXPECT_EQ(errors_in(report), 0) << report;
}

}  // namespace
}  // namespace autoreg::rt::test
