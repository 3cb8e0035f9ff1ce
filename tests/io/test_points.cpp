// Point files (io/points.h): every format round-trips, each format's coordinate convention
// is pinned by a hand-written file, a known displacement moves points where it should on a
// rotated anisotropic grid, TRE statistics, and bad files name the file and the row.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "autoreg/io/field.h"
#include "autoreg/io/points.h"

namespace autoreg::io {
namespace {

namespace fs = std::filesystem;

class Points : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-points-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // Anisotropic, rotated 90° about z, off the origin: a slab like the liver set's.
    grid_.size = {10, 12, 6};
    grid_.spacing = {1.5, 1.25, 4.0};
    grid_.origin = {-20, 7, 3};
    grid_.direction = {0, -1, 0, 1, 0, 0, 0, 0, 1};
    set_.points = {{1.5, -2.25, 10}, {-12.125, 3.5, 0.75}, {0, 0, 0}};
    set_.columns = {"t", "label"};
    set_.extra = {{"0", "liver"}, {"0", "wall"}, {"1", "spine"}};
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }
  // The LPS point of continuous index (i, j, k) of grid_.
  std::array<double, 3> at_index(double i, double j, double k) const {
    std::array<double, 3> p{};
    const double ijk[3] = {i, j, k};
    for (int r = 0; r < 3; ++r) {
      p[r] = grid_.origin[r];
      for (int c = 0; c < 3; ++c) p[r] += grid_.direction[r * 3 + c] * grid_.spacing[c] * ijk[c];
    }
    return p;
  }
  static void expect_near(const std::array<double, 3>& a, const std::array<double, 3>& b, double tol = 1e-9) {
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(a[c], b[c], tol) << "coordinate " << c;
  }

  fs::path dir_;
  Geometry grid_;
  PointSet set_;
};

TEST_F(Points, EveryFormatRoundTripsInOrder) {
  PointFileOptions with_grid;
  with_grid.grid = grid_;
  PointFileOptions one_based = with_grid;
  one_based.index_base = 1;
  for (const auto& [name, options] : std::vector<std::pair<std::string, PointFileOptions>>{
           {"p.csv", {}}, {"p.vtk", {}}, {"p.fcsv", {}}, {"p.mrk.json", {}}, {"p.txt", {}}, {"i.txt", with_grid},
           {"v.pts", one_based}}) {
    write_points(path(name), set_, options);
    const PointSet back = read_points(path(name), options);
    ASSERT_EQ(back.points.size(), set_.points.size()) << name;
    for (size_t i = 0; i < set_.points.size(); ++i) expect_near(back.points[i], set_.points[i], 1e-9);
  }
  // The CSV keeps its extra columns, and the markups their labels.
  const PointSet csv = read_points(path("p.csv"));
  EXPECT_EQ(csv.columns, set_.columns);
  EXPECT_EQ(csv.extra, set_.extra);
  EXPECT_EQ(read_points(path("p.fcsv")).extra[2][0], "spine");
  EXPECT_EQ(read_points(path("p.mrk.json")).extra[1][0], "wall");
}

TEST_F(Points, EachFormatsConventionIsPinned) {
  // ANTs' CSV: LPS as written.
  write("a.csv", "x,y,z,t,label\n1,2,3,0,7\n");
  expect_near(read_points(path("a.csv")).points[0], {1, 2, 3});
  // Slicer's legacy markups: RAS (x and y negated); LPS when the header says so.
  write("r.fcsv", "# Markups fiducial file version = 4.11\n# CoordinateSystem = RAS\n"
                  "# columns = id,x,y,z,ow,ox,oy,oz,vis,sel,lock,label,desc,associatedNodeID\n"
                  "vtkMRMLMarkupsFiducialNode_0,1,2,3,0,0,0,1,1,1,0,F-1,,\n");
  expect_near(read_points(path("r.fcsv")).points[0], {-1, -2, 3});
  write("l.fcsv", "# CoordinateSystem = 1\nid0,1,2,3,0,0,0,1,1,1,0,F-1,,\n");
  expect_near(read_points(path("l.fcsv")).points[0], {1, 2, 3});
  write("r.mrk.json", R"({"markups":[{"type":"Fiducial","coordinateSystem":"RAS","controlPoints":[{"position":[1,2,3]}]}]})");
  expect_near(read_points(path("r.mrk.json")).points[0], {-1, -2, 3});
  write("l.mrk.json", R"({"markups":[{"type":"Fiducial","coordinateSystem":"LPS","controlPoints":[{"position":[1,2,3]}]}]})");
  expect_near(read_points(path("l.mrk.json")).points[0], {1, 2, 3});
  // VTK: physical coordinates as written (the liver set's landmarks).
  write("p.vtk", "# vtk DataFile Version 3.0\nvtk output\nASCII\nDATASET POLYDATA\nPOINTS 2 float\n1 2 3 4 5\n6\n");
  expect_near(read_points(path("p.vtk")).points[1], {4, 5, 6});
  // elastix: `point` is physical, `index` 0-based indices of the grid.
  write("p.txt", "point\n1\n1 2 3\n");
  expect_near(read_points(path("p.txt")).points[0], {1, 2, 3});
  PointFileOptions o;
  o.grid = grid_;
  write("i.txt", "index\n2\n0 0 0\n2 1 3\n");
  const PointSet idx = read_points(path("i.txt"), o);
  expect_near(idx.points[0], {-20, 7, 3});
  // rotated: i runs along +y, j along -x; 2 × 1.5 mm, 1 × 1.25 mm, 3 × 4 mm.
  expect_near(idx.points[1], {-20 - 1.25, 7 + 3.0, 3 + 12.0});
  // A voxel-index list, 1-based (DIR-Lab) and 0-based.
  write("d.txt", "1\t1\t1\n3\t2\t4\n");
  o.index_base = 1;
  expect_near(read_points(path("d.txt"), o).points[1], idx.points[1]);
  o.index_base = 0;
  expect_near(read_points(path("d.txt"), o).points[0], at_index(1, 1, 1));
}

TEST_F(Points, AKnownDisplacementMovesPointsOnARotatedAnisotropicGrid) {
  // A field linear in the index: d(x) in LPS mm = a + B · index; trilinear interpolation
  // reproduces it exactly inside the grid.
  const int64_t D = grid_.size[2], H = grid_.size[1], W = grid_.size[0];
  const at::Tensor k = at::arange(D, at::kDouble).view({D, 1, 1}).expand({D, H, W});
  const at::Tensor j = at::arange(H, at::kDouble).view({1, H, 1}).expand({D, H, W});
  const at::Tensor i = at::arange(W, at::kDouble).view({1, 1, W}).expand({D, H, W});
  const auto d_of = [](double ii, double jj, double kk) {
    return std::array<double, 3>{1.0 + 0.5 * ii, -2.0 + 0.25 * kk, 0.75 * jj - 0.1 * ii};
  };
  const at::Tensor physical = at::stack({1.0 + 0.5 * i, -2.0 + 0.25 * k, 0.75 * j - 0.1 * i}).unsqueeze(0).to(at::kFloat);
  const at::Tensor voxels = physical_to_voxel(physical, grid_);
  const std::vector<std::array<double, 3>> at = {at_index(0, 0, 0), at_index(2.5, 7.25, 1.5), at_index(9, 11, 5),
                                                 at_index(-0.25, 3, 2)};
  const auto moved = displace_points(at, voxels, grid_, "test");
  const double ijk[4][3] = {{0, 0, 0}, {2.5, 7.25, 1.5}, {9, 11, 5}, {0, 3, 2}};  // the last held at the edge
  for (size_t n = 0; n < at.size(); ++n) {
    const auto d = d_of(ijk[n][0], ijk[n][1], ijk[n][2]);
    expect_near(moved[n], {at[n][0] + d[0], at[n][1] + d[1], at[n][2] + d[2]}, 1e-4);
  }
  // Beyond half a voxel of the edge: refused, naming the point.
  try {
    displace_points({at_index(0, 0, 0), at_index(0, 0, 6)}, voxels, grid_, "fixed.csv");
    FAIL() << "a point outside the grid was moved";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("fixed.csv point 2"), std::string::npos) << e.what();
  }
}

TEST_F(Points, TreOfAnIdentityFieldIsThePointsDistances) {
  const at::Tensor zero = at::zeros({1, 3, grid_.size[2], grid_.size[1], grid_.size[0]});
  const std::vector<std::array<double, 3>> a = {at_index(1, 1, 1), at_index(2, 3, 4), at_index(5, 5, 2), at_index(8, 1, 0)};
  std::vector<std::array<double, 3>> b = a;
  const double shifts[4] = {3, 0, 4, 1};
  for (size_t n = 0; n < b.size(); ++n) b[n][2] += shifts[n];
  const PointErrors e = point_errors(displace_points(a, zero, grid_, "a"), b);
  for (size_t n = 0; n < 4; ++n) EXPECT_NEAR(e.distances[n], shifts[n], 1e-12);
  EXPECT_DOUBLE_EQ(e.mean, 2.0);
  EXPECT_DOUBLE_EQ(e.median, 2.0);
  EXPECT_DOUBLE_EQ(e.max, 4.0);
  EXPECT_NEAR(e.p95, 3.0 + 0.85 * 1.0, 1e-12);  // numpy.percentile([0,1,3,4], 95)
}

TEST_F(Points, BadFilesNameTheFileAndTheRow) {
  const auto message = [&](const std::string& name, const std::string& text, PointFileOptions o = {}) {
    write(name, text);
    try {
      read_points(path(name), o);
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  const auto has = [](const std::string& m, const std::string& part) {
    return m.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(message("a.csv", "x,y,z\n1,2,3\n1,2\n"), "a.csv line 3: 2 columns"));
  EXPECT_TRUE(has(message("b.csv", "x,y,z\n1,nan,3\n"), "b.csv line 2"));
  EXPECT_TRUE(has(message("c.csv", "a,b,c\n1,2,3\n"), "needs the columns x,y,z"));
  EXPECT_TRUE(has(message("d.txt", "point\n3\n1 2 3\n4 5 6\n"), "the count says 3 points, the file has 2"));
  EXPECT_TRUE(has(message("e.txt", "point\n1\n1 2\n"), "e.txt line 3: 2 values"));
  EXPECT_TRUE(has(message("f.txt", "index\n1\n1 2 3\n"), "give the image whose grid"));
  EXPECT_TRUE(has(message("g.txt", "1 2 3\n"), "index base"));
  EXPECT_TRUE(has(message("h.vtk", "# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 3 float\n1 2 3\n"),
                  "POINTS says 3 points, the file has 1"));
  EXPECT_TRUE(has(message("i.mrk.json", "{\"markups\": 3}"), "not a Slicer markups file"));
  EXPECT_TRUE(has(message("j.dat", "1 2 3\n"), "not a point file name"));
  EXPECT_TRUE(has(message("k.csv", ""), "empty point file"));
}

}  // namespace
}  // namespace autoreg::io
