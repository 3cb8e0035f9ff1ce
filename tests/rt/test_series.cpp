// read_series: the grid and slice order ITK's GDCM reader gives, and the folders it refuses.
#include <fstream>

#include "rt_fixture.h"

namespace autoreg::rt::test {
namespace {

TEST(RtSeries, GeometryAndOrderOfShuffledSlices) {
  TempDir dir("series");
  SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  const DicomSeries series = read_series(dir / "ct");
  ASSERT_EQ(series.slices.size(), 12u);
  EXPECT_EQ(series.grid.size, (std::array<int64_t, 3>{40, 32, 12}));
  // PixelSpacing's first value is the spacing between rows: along j.
  EXPECT_NEAR(series.grid.spacing[0], 1.5, 1e-9);
  EXPECT_NEAR(series.grid.spacing[1], 1.25, 1e-9);
  EXPECT_NEAR(series.grid.spacing[2], 3, 1e-9);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(series.grid.origin[c], spec.origin[c], 1e-9);
  EXPECT_EQ(series.grid.direction, (std::array<double, 9>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  for (int k = 0; k < 12; ++k) {
    EXPECT_EQ(series.slices[k].sop_instance_uid, slice_uid(spec, k)) << k;
    EXPECT_EQ(series.slices[k].sop_class_uid, UID_CTImageStorage);
  }
  EXPECT_EQ(series.series_uid, spec.series_uid);
  EXPECT_EQ(series.frame_of_reference_uid, spec.frame_uid);
  EXPECT_EQ(series.study_uid, spec.study_uid);
  EXPECT_EQ(series.modality, "CT");
  EXPECT_EQ(series.patient.patient_name, "Test^Phantom");
  EXPECT_EQ(series.patient.patient_id, "RT-0001");
  EXPECT_EQ(series.patient.study_date, "20260102");
  EXPECT_EQ(series.patient.accession_number, "A1");
}

// Oblique slices stacked against their normal: sorted along it, and voxel (i, j, k) at
// ImagePositionPatient_k + i · column spacing · row cosine + j · row spacing · column cosine.
TEST(RtSeries, ObliqueGeometryMatchesThePixelPositions) {
  TempDir dir("oblique");
  SeriesSpec spec;
  spec.orientation = {0.8, 0.6, 0, 0, 0, -1};
  spec.slice_gap = -2.5;  // ImagePositionPatient walks against the normal
  spec.slices = 6;
  write_series(spec, dir.path() / "ct");
  const DicomSeries series = read_series(dir / "ct");
  ASSERT_EQ(series.slices.size(), 6u);
  EXPECT_NEAR(series.grid.spacing[2], 2.5, 1e-9);
  for (int k = 0; k < 6; ++k) {
    const int written = 5 - k;  // the last written slice is first along the normal
    EXPECT_EQ(series.slices[k].sop_instance_uid, slice_uid(spec, written));
    const Point ipp = slice_position(spec, written);
    for (const auto& [i, j] : {std::pair{0.0, 0.0}, std::pair{3.0, 0.0}, std::pair{2.0, 5.0}}) {
      const Point p = index_to_physical(series.grid, {i, j, double(k)});
      const Point expected = {ipp[0] + i * 1.5 * 0.8, ipp[1] + i * 1.5 * 0.6, ipp[2] - j * 1.25};
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(p[c], expected[c], 1e-9) << k << " " << i << " " << j;
      const Point back = physical_to_index(series.grid, p);
      EXPECT_NEAR(back[0], i, 1e-9);
      EXPECT_NEAR(back[1], j, 1e-9);
      EXPECT_NEAR(back[2], k, 1e-9);
    }
  }
}

TEST(RtSeries, SkipsFilesThatAreNoImageSlices) {
  TempDir dir("skips");
  SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  std::ofstream(dir.path() / "ct" / "README.txt") << "exported by the planning system\n";
  const DicomSeries series = read_series(dir / "ct");
  EXPECT_EQ(series.slices.size(), 12u);
  ASSERT_EQ(series.notes.size(), 1u);
  EXPECT_NE(series.notes[0].find("README.txt"), std::string::npos);
}

TEST(RtSeries, TwoSeriesInOneFolderAreRefused) {
  TempDir dir("two");
  SeriesSpec a, b;
  b.series_uid = "1.2.826.0.1.3680043.9.7777.1.2";
  write_series(a, dir.path() / "ct");
  write_slice(b, 3, (dir.path() / "ct" / "other.dcm").string());
  const std::string message = error_of([&] { read_series(dir / "ct"); });
  EXPECT_NE(message.find(dir / "ct"), std::string::npos) << message;
  EXPECT_NE(message.find(a.series_uid), std::string::npos) << message;
  EXPECT_NE(message.find(b.series_uid), std::string::npos) << message;
}

TEST(RtSeries, AMissingSliceIsRefused) {
  TempDir dir("missing");
  SeriesSpec spec;
  spec.skip = {6};
  write_series(spec, dir.path() / "ct");
  const std::string message = error_of([&] { read_series(dir / "ct"); });
  EXPECT_NE(message.find(dir / "ct"), std::string::npos) << message;
  EXPECT_NE(message.find("uneven slice spacing"), std::string::npos) << message;
  EXPECT_NE(message.find("missing slice"), std::string::npos) << message;
}

TEST(RtSeries, TwoSlicesAtOnePositionAreRefused) {
  TempDir dir("duplicate");
  SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  SeriesSpec copy = spec;
  copy.series_uid = spec.series_uid;  // same series, a second file of slice 4
  write_slice(copy, 4, (dir.path() / "ct" / "zzz.dcm").string());
  // Same SOP instance UID too, but the position is what is checked.
  const std::string message = error_of([&] { read_series(dir / "ct"); });
  EXPECT_NE(message.find("two slices at one position"), std::string::npos) << message;
  EXPECT_NE(message.find("zzz.dcm"), std::string::npos) << message;
}

TEST(RtSeries, ASliceWithoutFrameOfReferenceIsRefused) {
  TempDir dir("frame");
  SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  SeriesSpec broken = spec;
  broken.frame_of_reference = false;
  const std::string file = dir / "ct/img100.dcm";
  write_slice(broken, 3, file);  // overwrites one slice (the one at k = 3)
  const std::string message = error_of([&] { read_series(dir / "ct"); });
  EXPECT_NE(message.find(file), std::string::npos) << message;
  EXPECT_NE(message.find("FrameOfReferenceUID"), std::string::npos) << message;
}

TEST(RtSeries, AFolderWithoutSlicesIsRefused) {
  TempDir dir("empty");
  EXPECT_NE(error_of([&] { read_series(dir / "nothing-here"); }).find("not a folder"), std::string::npos);
  EXPECT_NE(error_of([&] { read_series(dir.path().string()); }).find("no DICOM image slice"), std::string::npos);
}

}  // namespace
}  // namespace autoreg::rt::test
