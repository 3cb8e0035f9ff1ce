// `autoreg apply --points` and `autoreg evaluate --fixed-points/--moving-points`: points
// move by the field's displacement into the moving image with their order and columns,
// TRE before and after, and bad point input refused with exit 2 and nothing written.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>
#include <nlohmann/json.hpp>

#include "autoreg/io/field.h"
#include "autoreg/io/points.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class PointsCli : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    // A constant displacement of (2, -1, 3) mm LPS on the fixture's rotated grid.
    const at::Tensor physical = at::tensor({2.0, -1.0, 3.0}).view({1, 3, 1, 1, 1}).expand({1, 3, 8, 10, 12}).contiguous();
    io::write_displacement_field(path("shift.nii.gz"), io::physical_to_voxel(physical, grid_).to(at::kFloat), grid_);
    // Two points inside the grid (origin -5, 3, 1; i along +y, j along -x).
    std::ofstream(path("fixed.csv")) << "x,y,z,t,label\n-6,5,3,0,a\n-10,12.5,9,0,b\n";
  }
};

TEST_F(PointsCli, ApplyMovesPointsByTheFieldKeepingOrderAndColumns) {
  const Result r = run("apply --field " + path("shift.nii.gz") + " --points " + path("fixed.csv") + " --out " + path("moved.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  const io::PointSet moved = io::read_points(path("moved.csv"));
  ASSERT_EQ(moved.points.size(), 2u);
  const double expected[2][3] = {{-4, 4, 6}, {-8, 11.5, 12}};
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(moved.points[n][c], expected[n][c], 1e-4);
  }
  EXPECT_EQ(moved.extra[1][1], "b");
  // Slicer's file is in RAS: x and y negated.
  ASSERT_EQ(run("apply --field " + path("shift.nii.gz") + " --points " + path("fixed.csv") + " --out " + path("moved.fcsv")).code, 0);
  const io::PointSet slicer = io::read_points(path("moved.fcsv"));
  EXPECT_NEAR(slicer.points[0][0], -4, 1e-4);
  std::ifstream f(path("moved.fcsv"));
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(text.find("# CoordinateSystem = RAS"), std::string::npos) << text;
  EXPECT_NEAR(std::stod(text.substr(text.find("_0,") + 3)), 4, 1e-4) << text;  // x of RAS
}

TEST_F(PointsCli, EvaluateGivesTheTreBeforeAndAfter) {
  std::ofstream(path("moving.csv")) << "x,y,z\n-4,4,6\n-8,11.5,12\n";  // where the field sends them
  const Result r = run("evaluate --fixed-points " + path("fixed.csv") + " --moving-points " + path("moving.csv") +
                       " --field " + path("shift.nii.gz") + " --json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_NEAR(j["tre"]["before"]["mean_mm"].get<double>(), std::sqrt(14.0), 1e-9);  // |(2,-1,3)|
  EXPECT_NEAR(j["tre"]["after"]["max_mm"].get<double>(), 0, 1e-4);
  EXPECT_EQ(j["tre"]["per_point_mm"].size(), 2u);
  EXPECT_TRUE(j.contains("non_positive_jacobian_percent"));
}

TEST_F(PointsCli, BadPointInputIsRefusedAndNothingWritten) {
  std::ofstream(path("outside.csv")) << "x,y,z\n-6,5,3\n500,0,0\n";
  Result r = run("apply --field " + path("shift.nii.gz") + " --points " + path("outside.csv") + " --out " + path("o.csv"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("outside.csv point 2"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("o.csv")));
  std::ofstream(path("short.csv")) << "x,y,z\n-6,5,3\n";
  r = run("evaluate --fixed-points " + path("fixed.csv") + " --moving-points " + path("short.csv") + " --field " + path("shift.nii.gz"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("1 points"), std::string::npos) << r.output;
  std::ofstream(path("count.txt")) << "point\n3\n1 2 3\n";
  r = run("apply --field " + path("shift.nii.gz") + " --points " + path("count.txt") + " --out " + path("o.csv"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("count.txt line 2"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("o.csv")));
  r = run("apply --field " + path("shift.nii.gz") + " --points " + path("fixed.csv") + " --moving " + path("moving.nii.gz") +
          " --out " + path("o.csv"));
  EXPECT_EQ(r.code, 1) << r.output;
  r = run("evaluate --fixed-points " + path("fixed.csv"));
  EXPECT_EQ(r.code, 1) << r.output;
}

TEST_F(PointsCli, RegisterAndPairsReportTheTre) {
  // No affine and no deformable step: the identity map, so the landmarks (3, 0, 4) mm
  // apart stay 5 mm apart: the summary's TRE is the points' own distance.
  std::ofstream(path("moving.csv")) << "x,y,z\n-3,5,7\n-7,12.5,13\n";
  const std::string pair = " --fixed " + path("moving.nii.gz") + " --moving " + path("moving.nii.gz");
  const std::string identity = " --no-affine --iterations 0,0 --threads 2";
  const Result r = run("register" + pair + " --out-warped " + path("w.nii.gz") + " --out-field " + path("f.nii.gz") +
                       " --fixed-points " + path("fixed.csv") + " --moving-points " + path("moving.csv") + identity + " --json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["tre"]["points"].get<int>(), 2);
  EXPECT_NEAR(j["tre"]["before_mean_mm"].get<double>(), 5.0, 1e-9);
  EXPECT_NEAR(j["tre_mm"].get<double>(), 5.0, 1e-4);
  EXPECT_NEAR(j["tre"]["max_mm"].get<double>(), 5.0, 1e-4);
  // --pairs: point columns, a tre_mm column in summary.csv and in index.html.
  std::ofstream(path("pairs.csv")) << "fixed,moving,fixed_points,moving_points\nmoving.nii.gz,moving.nii.gz,fixed.csv,moving.csv\n";
  const Result b = run("register --pairs " + path("pairs.csv") + " --out-dir " + path("out") + identity);
  ASSERT_EQ(b.code, 0) << b.output;
  std::ifstream csv(path("out/summary.csv"));
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  const auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream in(line);
    for (std::string c; std::getline(in, c, ',');) out.push_back(c);
    return out;
  };
  const auto names = cells(header), values = cells(row);
  const auto at = std::find(names.begin(), names.end(), "tre_mm");
  ASSERT_NE(at, names.end()) << header;
  ASSERT_LT(size_t(at - names.begin()), values.size()) << row;
  EXPECT_NEAR(std::stod(values[at - names.begin()]), 5.0, 1e-4) << row;
  std::ifstream html(path("out/index.html"));
  const std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(page.find("TRE mm"), std::string::npos);
  // One side alone is a usage error.
  EXPECT_EQ(run("register" + pair + " --out-warped " + path("w2.nii.gz") + " --out-field " + path("f2.nii.gz") +
                " --fixed-points " + path("fixed.csv")).code, 1);
}

}  // namespace
}  // namespace autoreg::test
