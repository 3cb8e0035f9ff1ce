// The shared planning CT series and its expert RTSTRUCT (../shared/data/ct_cbct/dicom, or
// $AUTOREG_TEST_DATA/ct_cbct/dicom); skipped when absent.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "autoreg/rt/contours.h"
#include "autoreg/rt/write.h"
#include "rt_fixture.h"
#include "shared_data.h"

namespace autoreg::rt::test {
namespace {

fs::path dicom_dir() { return autoreg::test::shared_data() / "ct_cbct" / "dicom"; }

TEST(RtRealData, PlanningCtAndItsStructureSet) {
  const fs::path dir = dicom_dir();
  if (!fs::exists(dir / "planct") || !fs::exists(dir / "planct_rtstruct.dcm"))
    GTEST_SKIP() << "no shared DICOM data at " << dir;
  const std::string ct = (dir / "planct").string(), rs = (dir / "planct_rtstruct.dcm").string();
  const DicomSeries series = read_series(ct);
  EXPECT_EQ(series.grid.size, (std::array<int64_t, 3>{512, 512, 79}));
  EXPECT_NEAR(series.grid.spacing[0], 1.07421875, 1e-9);
  EXPECT_NEAR(series.grid.spacing[1], 1.07421875, 1e-9);
  EXPECT_NEAR(series.grid.spacing[2], 3.0, 1e-6);
  EXPECT_NEAR(series.grid.origin[2], 250.91, 1e-6);  // the lowest slice
  const StructureSet ss = read_structure_set(rs);
  EXPECT_NO_THROW(check_references(ss, series, rs, ct));
  const auto stomach = std::find_if(ss.rois.begin(), ss.rois.end(), [](const Roi& r) { return r.name == "Stomach_duo_planCT"; });
  ASSERT_NE(stomach, ss.rois.end());
  const Rasterised r = rasterise(*stomach, series.grid, rs);
  // An independent reader (pydicom, a crossing-number test at every voxel centre, even-odd
  // over a slice's contours) counts 79 026 voxels; the label map planct_labels.nii.gz
  // (label 2, 61 644 voxels, Dice 0.83 with either) was not made from this RTSTRUCT alone.
  EXPECT_NEAR(double(count(r.mask)), 79026.0, 0.005 * 79026.0);
  const double ml = double(count(r.mask)) * 1.07421875 * 1.07421875 * 3.0 / 1000.0;
  std::printf("Stomach_duo_planCT: %lld voxels (%.0f ml), %d contours filled, %d beyond the series\n",
              static_cast<long long>(count(r.mask)), ml, r.contours_filled, r.contours_outside);
  // The CBCT shares the planning CT's frame of reference here, but not its series.
  if (fs::exists(dir / "cbct02")) {
    const DicomSeries cbct = read_series((dir / "cbct02").string());
    EXPECT_THROW(check_references(ss, cbct, rs, (dir / "cbct02").string()), DicomError);
  }
}

// Every structure rasterised, contoured again and written as a new structure set on the
// same series: the same voxels (Dice >= 0.98), and no error from dciodvfy when installed.
// $AUTOREG_RT_TEST_KEEP (a folder), when set, keeps the written file for other readers.
TEST(RtRealData, RoundTripOnThePlanningCt) {
  const fs::path dir = dicom_dir();
  if (!fs::exists(dir / "planct") || !fs::exists(dir / "planct_rtstruct.dcm"))
    GTEST_SKIP() << "no shared DICOM data at " << dir;
  const DicomSeries series = read_series((dir / "planct").string());
  const std::string source = (dir / "planct_rtstruct.dcm").string();
  const StructureSet ss = read_structure_set(source);
  std::vector<Roi> again;
  std::vector<std::vector<uint8_t>> masks;
  for (const Roi& roi : ss.rois) {
    masks.push_back(rasterise(roi, series.grid, source).mask);
    const std::vector<float> values(masks.back().begin(), masks.back().end());
    again.push_back(roi);
    again.back().contours = contours_from_volume(values.data(), series, 0.5);
  }
  TempDir out("real");
  const std::string path = out / "RS_again.dcm";
  WriteInfo info;
  info.source_sop_instance_uid = ss.sop_instance_uid;
  info.source_label = ss.label;
  write_structure_set(path, again, series, info);
  const StructureSet back = read_structure_set(path);
  EXPECT_NO_THROW(check_references(back, series, path, (dir / "planct").string()));
  ASSERT_EQ(back.rois.size(), ss.rois.size());
  for (size_t r = 0; r < ss.rois.size(); ++r)
    EXPECT_GE(dice(rasterise(back.rois[r], series.grid, path).mask, masks[r]), 0.98) << ss.rois[r].name;
  if (const char* keep = std::getenv("AUTOREG_RT_TEST_KEEP"); keep && *keep)
    fs::copy_file(path, fs::path(keep) / "RS_again.dcm", fs::copy_options::overwrite_existing);
  if (std::system("command -v dciodvfy > /dev/null 2>&1") == 0) {
    const std::string command = "dciodvfy '" + path + "' 2>&1 | grep -c '^Error' > '" + out / "errors.txt" + "'";
    std::system(command.c_str());
    std::ifstream errors(out / "errors.txt");
    int count = -1;
    errors >> count;
    EXPECT_EQ(count, 0) << "dciodvfy found errors in " << path;
  }
}

}  // namespace
}  // namespace autoreg::rt::test
