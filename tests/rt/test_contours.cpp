// contours_from_volume: loops that reproduce the volume's thresholded voxels when filled
// again, never cross, close along the grid's edge; the round trip through an RTSTRUCT;
// and rasterise's speed.
#include <chrono>
#include <cstdio>
#include <random>

#include "autoreg/rt/contours.h"
#include "autoreg/rt/write.h"
#include "rt_fixture.h"

namespace autoreg::rt::test {
namespace {

// A series in memory only: the grid and made-up slice UIDs.
DicomSeries memory_series(int64_t nx, int64_t ny, int64_t nz) {
  DicomSeries s;
  s.grid.size = {nx, ny, nz};
  s.grid.spacing = {0.8, 1.1, 2.0};
  s.grid.origin = {10, -20, 30};
  for (int64_t k = 0; k < nz; ++k) s.slices.push_back({"1.2.3", "1.2.3.4." + std::to_string(k), {}, ""});
  return s;
}

std::vector<uint8_t> filled(const std::vector<Contour>& contours, const DicomSeries& s) {
  Roi roi;
  roi.contours = contours;
  return rasterise(roi, s.grid).mask;
}

// Whether segments ab and cd cross or touch (other than at a shared end point).
bool segments_meet(const std::array<double, 2>& a, const std::array<double, 2>& b, const std::array<double, 2>& c,
                   const std::array<double, 2>& d) {
  auto orient = [](const auto& p, const auto& q, const auto& r) {
    return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]);
  };
  if (a == c || a == d || b == c || b == d) return false;
  const double d1 = orient(c, d, a), d2 = orient(c, d, b), d3 = orient(a, b, c), d4 = orient(a, b, d);
  return ((d1 > 0) != (d2 > 0)) && ((d3 > 0) != (d4 > 0)) && d1 != 0 && d2 != 0 && d3 != 0 && d4 != 0;
}

TEST(RtContours, RandomFieldLoopsNeverCross) {
  const DicomSeries s = memory_series(30, 22, 3);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(0, 1);
  std::vector<float> values(size_t(voxel_count(s.grid)));
  for (auto& v : values) v = uniform(random);
  const auto contours = contours_from_volume(values.data(), s, 0.5);
  ASSERT_FALSE(contours.empty());
  // Loops of one slice, in voxel coordinates: no two segments meet.
  for (int64_t k = 0; k < 3; ++k) {
    std::vector<std::array<std::array<double, 2>, 2>> segments;
    for (const auto& c : contours) {
      if (c.referenced_sop_instance_uid != s.slices[size_t(k)].sop_instance_uid) continue;
      for (size_t p = 0; p < c.points.size(); ++p) {
        const auto a = physical_to_index(s.grid, c.points[p]), b = physical_to_index(s.grid, c.points[(p + 1) % c.points.size()]);
        EXPECT_NEAR(a[2], double(k), 1e-9);
        segments.push_back({{{a[0], a[1]}, {b[0], b[1]}}});
      }
    }
    for (size_t x = 0; x < segments.size(); ++x)
      for (size_t y = x + 1; y < segments.size(); ++y)
        ASSERT_FALSE(segments_meet(segments[x][0], segments[x][1], segments[y][0], segments[y][1]))
            << "slice " << k << ": segments " << x << " and " << y << " cross";
  }
}

// A smooth field (blobs of a few voxels, level away from its saddles) with mild noise:
// filled again (even-odd), the loops give back exactly the voxels at or above the level.
TEST(RtContours, LoopsRefillTheVoxelsAboveTheLevel) {
  const DicomSeries s = memory_series(40, 30, 2);
  std::mt19937 random(11);
  std::uniform_real_distribution<float> noise(-0.04f, 0.04f);
  std::vector<float> values(size_t(voxel_count(s.grid)));
  for (int64_t k = 0; k < 2; ++k)
    for (int64_t j = 0; j < 30; ++j)
      for (int64_t i = 0; i < 40; ++i)
        values[size_t((k * 30 + j) * 40 + i)] =
            float(0.5 + 0.5 * std::sin((i + 3 * k) / 3.0) * std::sin(j / 2.5)) + noise(random);
  const auto contours = contours_from_volume(values.data(), s, 0.3);
  const auto mask = filled(contours, s);
  int64_t differ = 0, above = 0;
  for (size_t v = 0; v < values.size(); ++v) differ += mask[v] != (values[v] >= 0.3f), above += values[v] >= 0.3f;
  EXPECT_GT(above, 500);
  EXPECT_LE(differ, 2) << differ << " of " << above;
}

TEST(RtContours, AMaskRoundTripsExactly) {
  const DicomSeries s = memory_series(25, 18, 2);
  std::vector<float> mask(size_t(voxel_count(s.grid)), 0);
  // A checkerboard corner (a saddle: two voxels meeting diagonally), a hole, a line.
  auto set = [&](int64_t i, int64_t j, int64_t k) { mask[size_t((k * 18 + j) * 25 + i)] = 1; };
  set(3, 3, 0), set(4, 4, 0);
  for (int64_t j = 8; j < 15; ++j)
    for (int64_t i = 8; i < 20; ++i)
      if (!(i == 12 && j == 11)) set(i, j, 0);
  for (int64_t i = 2; i < 22; ++i) set(i, 5, 1);
  const auto contours = contours_from_volume(mask.data(), s, 0.5);
  const auto again = filled(contours, s);
  for (size_t v = 0; v < mask.size(); ++v) ASSERT_EQ(again[v], mask[v] > 0.5f) << v;
  // The diagonal pair joins at level 0.5 (the saddle's centre is 0.5), not above.
  int on_slice_0 = 0;
  for (const auto& c : contours) on_slice_0 += c.referenced_sop_instance_uid == s.slices[0].sop_instance_uid;
  EXPECT_EQ(on_slice_0, 3);  // the joined pair, the block's outline, the hole
  int apart = 0;
  for (const auto& c : contours_from_volume(mask.data(), s, 0.6))
    apart += c.referenced_sop_instance_uid == s.slices[0].sop_instance_uid;
  EXPECT_EQ(apart, 4);
}

TEST(RtContours, AStructureCutByTheEdgeIsClosedAlongIt) {
  const DicomSeries s = memory_series(12, 9, 3);
  std::vector<float> ones(size_t(voxel_count(s.grid)), 1.f);
  const auto contours = contours_from_volume(ones.data(), s, 0.5);
  ASSERT_EQ(contours.size(), 3u);
  // Half a voxel beyond the outermost centres, the corners cut (marching squares): an
  // octagon once the straight runs are simplified.
  EXPECT_EQ(contours[0].points.size(), 8u);
  for (const auto& p : contours[0].points) {
    const auto index = physical_to_index(s.grid, p);
    const bool on_side = std::fabs(index[0] + 0.5) < 1e-9 || std::fabs(index[0] - 11.5) < 1e-9;
    const bool on_end = std::fabs(index[1] + 0.5) < 1e-9 || std::fabs(index[1] - 8.5) < 1e-9;
    EXPECT_TRUE(on_side != on_end) << index[0] << " " << index[1];
  }
  EXPECT_EQ(count(filled(contours, s)), 3 * 12 * 9);
  // The outermost layer: both end slices whole, the middle slice's rim.
  EXPECT_EQ(voxels_on_border(ones.data(), s.grid, 0.5), 2 * 12 * 9 + 2 * 12 + 2 * 7);
  std::vector<float> inner(size_t(voxel_count(s.grid)), 0.f);
  inner[size_t((1 * 9 + 4) * 12 + 5)] = 1;
  EXPECT_EQ(voxels_on_border(inner.data(), s.grid, 0.5), 0);
}

TEST(RtContours, NonFiniteValuesAreRefused) {
  const DicomSeries s = memory_series(4, 4, 1);
  std::vector<float> values(16, 0.f);
  values[5] = std::nanf("");
  EXPECT_THROW(contours_from_volume(values.data(), s, 0.5), std::invalid_argument);
}

// RTSTRUCT → labels → RTSTRUCT on the same series → labels: the same voxels.
TEST(RtContours, RoundTripThroughAStructureSet) {
  TempDir dir("roundtrip");
  SeriesSpec spec;
  write_series(spec, dir.path() / "ct");
  const DicomSeries series = read_series(dir / "ct");
  const std::string source = dir / "RS_source.dcm";
  const Written first = write_structure_set(source, test_rois(spec), series, {});
  const StructureSet ss = read_structure_set(source);
  std::vector<Roi> deformed;
  std::vector<std::vector<uint8_t>> masks;
  for (const Roi& roi : ss.rois) {
    masks.push_back(rasterise(roi, series.grid, source).mask);
    std::vector<float> values(masks.back().begin(), masks.back().end());
    Roi out = roi;
    out.contours = contours_from_volume(values.data(), series, 0.5);
    deformed.push_back(out);
  }
  WriteInfo info;
  info.source_sop_instance_uid = ss.sop_instance_uid;
  info.source_label = ss.label;
  const std::string path = dir / "RS_deformed.dcm";
  const Written second = write_structure_set(path, deformed, series, info);
  const StructureSet back = read_structure_set(path);
  ASSERT_EQ(back.rois.size(), ss.rois.size());
  for (size_t r = 0; r < ss.rois.size(); ++r) {
    const double d = dice(rasterise(back.rois[r], series.grid, path).mask, masks[r]);
    EXPECT_GE(d, 0.98) << back.rois[r].name;
    EXPECT_EQ(back.rois[r].name, ss.rois[r].name);
    EXPECT_EQ(back.rois[r].color, ss.rois[r].color);
    for (const auto& c : back.rois[r].contours) {
      const bool on_a_slice = std::any_of(series.slices.begin(), series.slices.end(), [&](const Slice& sl) {
        return sl.sop_instance_uid == c.referenced_sop_instance_uid;
      });
      EXPECT_TRUE(on_a_slice) << c.referenced_sop_instance_uid;
    }
  }
  EXPECT_NE(second.sop_instance_uid, first.sop_instance_uid);
  EXPECT_NE(second.series_uid, first.series_uid);
  EXPECT_EQ(back.referenced_series_uids, std::vector<std::string>{series.series_uid});
  EXPECT_EQ(back.frame_of_reference_uid, series.frame_of_reference_uid);
  EXPECT_NO_THROW(check_references(back, series, path, dir / "ct"));
}

// 512 × 512 × 100 voxels, a 4 000-point contour on each of 100 slices.
TEST(RtContours, RasteriseIsFast) {
  DicomSeries s = memory_series(512, 512, 100);
  s.grid.spacing = {0.9, 0.9, 2.5};
  Roi roi;
  roi.name = "Body";
  for (int k = 0; k < 100; ++k) {
    Contour c;
    for (int p = 0; p < 4000; ++p) {
      const double a = 2 * M_PI * p / 4000, r = 150 + 20 * std::sin(7 * a);
      c.points.push_back(index_to_physical(s.grid, {256 + r * std::cos(a), 256 + r * std::sin(a), double(k)}));
    }
    roi.contours.push_back(std::move(c));
  }
  const auto start = std::chrono::steady_clock::now();
  const Rasterised r = rasterise(roi, s.grid);
  const double rasterise_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(count(r.mask), 100 * 60000);
  std::vector<float> values(r.mask.begin(), r.mask.end());
  const auto middle = std::chrono::steady_clock::now();
  const auto contours = contours_from_volume(values.data(), s, 0.5);
  const double contours_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - middle).count();
  EXPECT_EQ(contours.size(), 100u);
  std::printf("rasterise: %.1f ms, contours_from_volume: %.1f ms (512x512x100)\n", 1e3 * rasterise_s, 1e3 * contours_s);
  EXPECT_LT(rasterise_s, 1.0);  // milliseconds in a release build; generous for sanitizers
}

}  // namespace
}  // namespace autoreg::rt::test
