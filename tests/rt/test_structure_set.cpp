// RT Structure Sets written, read back, checked against their series and refused when
// broken; each error names the file and the object at fault.
#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dcmetinf.h>
#include <dcmtk/dcmdata/dcsequen.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "autoreg/rt/write.h"
#include "rt_fixture.h"

namespace autoreg::rt::test {
namespace {

class RtStructureSet : public ::testing::Test {
 protected:
  RtStructureSet() : dir_("ss") {
    write_series(spec_, dir_.path() / "ct");
    series_ = read_series(dir_ / "ct");
    rs_ = dir_ / "RS.dcm";
    info_.source_sop_instance_uid = "1.2.826.0.1.3680043.9.7777.9.1";
    info_.source_label = "Expert";
    written_ = write_structure_set(rs_, test_rois(spec_), series_, info_);
  }

  // Loads RS.dcm, lets `edit` change its data set, saves it as `name`; returns the path.
  std::string edited(const std::string& name, const std::function<void(DcmDataset&)>& edit) {
    DcmFileFormat file;
    EXPECT_TRUE(file.loadFile(rs_.c_str()).good());
    edit(*file.getDataset());
    const std::string path = dir_ / name;
    EXPECT_TRUE(file.saveFile(path.c_str(), EXS_LittleEndianExplicit).good());
    return path;
  }

  // Item `index` of the sequence `tag` at the data set's top level.
  static DcmItem& item(DcmDataset& d, const DcmTagKey& tag, unsigned long index) {
    DcmSequenceOfItems* seq = nullptr;
    d.findAndGetSequence(tag, seq);
    return *seq->getItem(index);
  }

  TempDir dir_;
  SeriesSpec spec_;
  DicomSeries series_;
  std::string rs_;
  WriteInfo info_;
  Written written_;
};

TEST_F(RtStructureSet, WrittenAndReadBack) {
  const StructureSet ss = read_structure_set(rs_);
  const auto rois = test_rois(spec_);
  ASSERT_EQ(ss.rois.size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(ss.rois[r].number, rois[r].number);
    EXPECT_EQ(ss.rois[r].name, rois[r].name);
    EXPECT_EQ(ss.rois[r].color, rois[r].color);
    EXPECT_EQ(ss.rois[r].interpreted_type, rois[r].interpreted_type);
    EXPECT_EQ(ss.rois[r].generation_algorithm, "AUTOMATIC");
    ASSERT_EQ(ss.rois[r].contours.size(), rois[r].contours.size());
    for (size_t c = 0; c < rois[r].contours.size(); ++c) {
      const auto& got = ss.rois[r].contours[c];
      const auto& want = rois[r].contours[c];
      EXPECT_EQ(got.referenced_sop_instance_uid, want.referenced_sop_instance_uid);
      ASSERT_EQ(got.points.size(), want.points.size());
      for (size_t p = 0; p < want.points.size(); ++p)
        for (int a = 0; a < 3; ++a) EXPECT_NEAR(got.points[p][a], want.points[p][a], 1e-6);
    }
  }
  EXPECT_EQ(ss.sop_instance_uid, written_.sop_instance_uid);
  EXPECT_EQ(ss.series_uid, written_.series_uid);
  EXPECT_EQ(ss.study_uid, spec_.study_uid);
  EXPECT_EQ(ss.frame_of_reference_uid, spec_.frame_uid);
  EXPECT_EQ(ss.referenced_series_uids, std::vector<std::string>{spec_.series_uid});
  EXPECT_EQ(ss.patient_id, "RT-0001");
  EXPECT_TRUE(ss.notes.empty());
  EXPECT_EQ(written_.contours, 4 + 4 + 7);
  // New UIDs: not the source's, the series' or a slice's.
  EXPECT_NE(written_.sop_instance_uid, info_.source_sop_instance_uid);
  EXPECT_NE(written_.series_uid, spec_.series_uid);
  EXPECT_NE(written_.sop_instance_uid, written_.series_uid);
  EXPECT_NO_THROW(check_references(ss, series_, rs_, dir_ / "ct"));
}

TEST_F(RtStructureSet, TheObjectReferencesTheSeriesAndIsUnapproved) {
  DcmFileFormat file;
  ASSERT_TRUE(file.loadFile(rs_.c_str()).good());
  EXPECT_EQ(file.getDataset()->getOriginalXfer(), EXS_LittleEndianExplicit);
  DcmDataset& d = *file.getDataset();
  OFString value;
  d.findAndGetOFString(DCM_ApprovalStatus, value);
  EXPECT_EQ(value, "UNAPPROVED");
  d.findAndGetOFString(DCM_SOPClassUID, value);
  EXPECT_EQ(value, UID_RTStructureSetStorage);
  d.findAndGetOFString(DCM_Manufacturer, value);
  EXPECT_EQ(value, "autoreg");
  d.findAndGetOFString(DCM_StructureSetDescription, value);
  EXPECT_NE(std::string(value.c_str()).find(info_.source_sop_instance_uid), std::string::npos);
  file.getMetaInfo()->findAndGetOFString(DCM_MediaStorageSOPInstanceUID, value);
  EXPECT_EQ(value, written_.sop_instance_uid.c_str());
  // Frame of reference → study → series → every slice.
  DcmItem& frame = item(d, DCM_ReferencedFrameOfReferenceSequence, 0);
  frame.findAndGetOFString(DCM_FrameOfReferenceUID, value);
  EXPECT_EQ(value, spec_.frame_uid.c_str());
  DcmItem* study = nullptr;
  ASSERT_TRUE(frame.findAndGetSequenceItem(DCM_RTReferencedStudySequence, study, 0).good());
  study->findAndGetOFString(DCM_ReferencedSOPInstanceUID, value);
  EXPECT_EQ(value, spec_.study_uid.c_str());
  DcmItem* referenced = nullptr;
  ASSERT_TRUE(study->findAndGetSequenceItem(DCM_RTReferencedSeriesSequence, referenced, 0).good());
  DcmSequenceOfItems* images = nullptr;
  ASSERT_TRUE(referenced->findAndGetSequence(DCM_ContourImageSequence, images).good());
  ASSERT_EQ(images->card(), 12u);
  for (unsigned long k = 0; k < 12; ++k) {
    images->getItem(k)->findAndGetOFString(DCM_ReferencedSOPInstanceUID, value);
    EXPECT_EQ(value, slice_uid(spec_, int(k)).c_str());
  }
}

TEST_F(RtStructureSet, RasterisedAsTheirAreas) {
  const StructureSet ss = read_structure_set(rs_);
  const Grid& g = series_.grid;
  const double voxel = 1.5 * 1.25;
  auto polygon_area = [](double r, int n) { return 0.5 * n * r * r * std::sin(2 * M_PI / n); };
  const Rasterised disk = rasterise(ss.rois[0], g, rs_);
  EXPECT_EQ(disk.contours_filled, 4);
  EXPECT_EQ(disk.contours_outside, 0);
  for (int k = 2; k <= 5; ++k) EXPECT_NEAR(double(count_slice(disk.mask, g, k)), polygon_area(12, 64) / voxel, 4) << k;
  EXPECT_EQ(count(disk.mask), 4 * count_slice(disk.mask, g, 2));
  const Rasterised ring = rasterise(ss.rois[1], g, rs_);
  EXPECT_NEAR(double(count_slice(ring.mask, g, 7)), (polygon_area(12, 64) - polygon_area(6, 40)) / voxel, 4);
  EXPECT_NEAR(double(count_slice(ring.mask, g, 8)), 2 * polygon_area(5, 64) / voxel, 4);
  // The hole: the centre voxel (20, 15) of slice 7 is outside, a voxel 9 mm out is inside.
  const int64_t per = g.size[0] * g.size[1];
  EXPECT_EQ(ring.mask[size_t(7 * per + 15 * 40 + 20)], 0);
  EXPECT_EQ(ring.mask[size_t(7 * per + 15 * 40 + 26)], 1);
  const Rasterised square = rasterise(ss.rois[2], g, rs_);
  EXPECT_EQ(count(square.mask), 7 * 9 * 6);  // centres i = 6..14, j = 5..10 on slices 3..9
}

TEST_F(RtStructureSet, ContoursBeyondTheGridAreCounted) {
  Roi roi = test_rois(spec_)[0];
  Contour beyond = circle(spec_, 0, 0, 20, 5);
  for (auto& p : beyond.points) p[2] -= 3 * 4;  // four slices below the first
  roi.contours.push_back(beyond);
  const Rasterised r = rasterise(roi, series_.grid);
  EXPECT_EQ(r.contours_outside, 1);
  EXPECT_EQ(r.contours_filled, 4);
}

TEST_F(RtStructureSet, AContourOffTheSlicePlaneIsRefused) {
  Roi roi = test_rois(spec_)[0];
  for (auto& p : roi.contours[1].points) p[2] += 1.0;  // a third of the 3 mm gap
  const std::string message = error_of([&] { rasterise(roi, series_.grid, rs_); });
  EXPECT_EQ(message.rfind(rs_, 0), 0u) << message;
  EXPECT_NE(message.find("ROI 'Disk' (number 1), contour 2"), std::string::npos) << message;
  EXPECT_NE(message.find("1.000000 mm off the slice plane"), std::string::npos) << message;
}

TEST_F(RtStructureSet, AnImageIsNoStructureSet) {
  const std::string slice = series_.slices[0].file;
  const std::string message = error_of([&] { read_structure_set(slice); });
  EXPECT_EQ(message.rfind(slice, 0), 0u) << message;
  EXPECT_NE(message.find("is not an RT Structure Set"), std::string::npos) << message;
}

TEST_F(RtStructureSet, AnotherFrameOfReferenceIsRefused) {
  SeriesSpec other;
  other.series_uid = "1.2.826.0.1.3680043.9.7777.1.5";
  other.frame_uid = "1.2.826.0.1.3680043.9.7777.2.5";
  write_series(other, dir_.path() / "cbct");
  const DicomSeries cbct = read_series(dir_ / "cbct");
  const StructureSet ss = read_structure_set(rs_);
  const std::string message = error_of([&] { check_references(ss, cbct, rs_, dir_ / "cbct"); });
  EXPECT_EQ(message.rfind(rs_, 0), 0u) << message;
  EXPECT_NE(message.find(spec_.frame_uid), std::string::npos) << message;
  EXPECT_NE(message.find(other.frame_uid), std::string::npos) << message;
  EXPECT_NE(message.find(dir_ / "cbct"), std::string::npos) << message;
  // Same frame of reference, another series: refused too, naming both series.
  other.frame_uid = spec_.frame_uid;
  write_series(other, dir_.path() / "cbct");
  const DicomSeries same_frame = read_series(dir_ / "cbct");
  const std::string second = error_of([&] { check_references(ss, same_frame, rs_, dir_ / "cbct"); });
  EXPECT_NE(second.find(spec_.series_uid), std::string::npos) << second;
  EXPECT_NE(second.find(other.series_uid), std::string::npos) << second;
}

TEST_F(RtStructureSet, AStructureSetWithoutContoursIsRefused) {
  auto rois = test_rois(spec_);
  for (auto& roi : rois) roi.contours.clear();
  const std::string empty = dir_ / "empty.dcm";
  write_structure_set(empty, rois, series_, info_);
  const std::string message = error_of([&] { read_structure_set(empty); });
  EXPECT_EQ(message.rfind(empty, 0), 0u) << message;
  EXPECT_NE(message.find("no ROI has a closed planar contour"), std::string::npos) << message;
}

TEST_F(RtStructureSet, BrokenContoursAreRefused) {
  const std::string wrong_count = edited("count.dcm", [](DcmDataset& d) {
    DcmItem& roi = item(d, DCM_ROIContourSequence, 0);
    DcmItem* contour = nullptr;
    roi.findAndGetSequenceItem(DCM_ContourSequence, contour, 0);
    contour->putAndInsertString(DCM_NumberOfContourPoints, "65");
  });
  std::string message = error_of([&] { read_structure_set(wrong_count); });
  EXPECT_EQ(message.rfind(wrong_count, 0), 0u) << message;
  EXPECT_NE(message.find("ROI 'Disk' (number 1), contour 1: ContourData holds 192 numbers"), std::string::npos)
      << message;

  const std::string not_finite = edited("nan.dcm", [](DcmDataset& d) {
    DcmItem* contour = nullptr;
    item(d, DCM_ROIContourSequence, 1).findAndGetSequenceItem(DCM_ContourSequence, contour, 2);
    contour->putAndInsertString(DCM_NumberOfContourPoints, "3");
    contour->putAndInsertString(DCM_ContourData, "1\\2\\3\\4\\nan\\6\\7\\8\\9");
  });
  message = error_of([&] { read_structure_set(not_finite); });
  EXPECT_NE(message.find("ROI 'Ring' (number 2), contour 3: ContourData: value 5 'nan' is not finite"),
            std::string::npos)
      << message;

  const std::string two_points = edited("two.dcm", [](DcmDataset& d) {
    DcmItem* contour = nullptr;
    item(d, DCM_ROIContourSequence, 2).findAndGetSequenceItem(DCM_ContourSequence, contour, 0);
    contour->putAndInsertString(DCM_NumberOfContourPoints, "2");
    contour->putAndInsertString(DCM_ContourData, "1\\2\\3\\4\\5\\6");
  });
  message = error_of([&] { read_structure_set(two_points); });
  EXPECT_NE(message.find("ROI 'Box' (number 7), contour 1 is a closed planar contour of 2 points"), std::string::npos)
      << message;
}

TEST_F(RtStructureSet, DuplicateRoiNumbersAreRefused) {
  const std::string path = edited("dup.dcm", [](DcmDataset& d) {
    item(d, DCM_StructureSetROISequence, 1).putAndInsertString(DCM_ROINumber, "1");
  });
  const std::string message = error_of([&] { read_structure_set(path); });
  EXPECT_EQ(message.rfind(path, 0), 0u) << message;
  EXPECT_NE(message.find("ROI number 1 is used twice ('Disk' and 'Ring')"), std::string::npos) << message;
}

TEST_F(RtStructureSet, OpenContoursAreSkippedWithANote) {
  const std::string path = edited("open.dcm", [](DcmDataset& d) {
    DcmItem* contour = nullptr;
    item(d, DCM_ROIContourSequence, 0).findAndGetSequenceItem(DCM_ContourSequence, contour, 1);
    contour->putAndInsertString(DCM_ContourGeometricType, "OPEN_PLANAR");
  });
  const StructureSet ss = read_structure_set(path);
  EXPECT_EQ(ss.rois[0].contours.size(), 3u);
  ASSERT_EQ(ss.notes.size(), 1u);
  EXPECT_NE(ss.notes[0].find("ROI 'Disk' (number 1): 1 contour(s) OPEN_PLANAR skipped"), std::string::npos)
      << ss.notes[0];
}

// dicom3tools' validator (Debian dicom3tools), when installed: no error in the object.
TEST_F(RtStructureSet, ValidatedByDciodvfy) {
  if (std::system("command -v dciodvfy > /dev/null 2>&1") != 0) GTEST_SKIP() << "dciodvfy is not installed";
  const std::string command = "dciodvfy '" + rs_ + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  ::pclose(pipe);
  std::printf("%s", output.c_str());
  EXPECT_EQ(output.find("Error"), std::string::npos) << output;
}

}  // namespace
}  // namespace autoreg::rt::test
