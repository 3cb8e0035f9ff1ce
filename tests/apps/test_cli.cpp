// The `autoreg` command line, run as a user runs it: outputs, exit codes, messages.
#include "autoreg/ops.h"
#include "cli.h"

namespace autoreg::test {
namespace {

TEST_F(Cli, ApplyWarpsLikeTheOperator) {
  const Result r = run("apply --field " + path("field.nii.gz") + " --moving " + path("moving.nii.gz") +
                       " --reference " + path("moving.nii.gz") + " --out " + path("warped.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  const io::Volume out = io::read_volume(path("warped.nii.gz"));
  // The field went through physical millimetres in float32 and back. The volume is its
  // voxels' extent (as in ITK): within half a voxel outside the border voxels' centres
  // the border value (the operator with border padding), beyond it 0.
  at::Tensor inside = at::ones({1, 1, 8, 10, 12}, at::kBool);
  for (int c = 0; c < 3; ++c) {
    const int64_t n = field_.size(2 + c);
    std::vector<int64_t> shape = {1, 1, 1};
    shape[c] = n;
    const at::Tensor p = field_.select(1, c).unsqueeze(1) + at::arange(n, at::kFloat).view(shape);
    inside = inside & (p >= -0.5) & (p < n - 0.5);
  }
  ASSERT_LT(inside.sum().item<int64_t>(), inside.numel());  // the field reaches outside
  const at::Tensor want = ops::warp(moving_, field_, ops::Interpolation::Linear, ops::Padding::Border) * inside;
  EXPECT_LT((out.data - want).abs().max().item<double>(), 1e-4);
}

TEST_F(Cli, ApplyNearestKeepsLabels) {
  const Result r = run("apply --interpolation nearest --field " + path("field.nii.gz") + " --moving " +
                       path("labels.nii.gz") + " --reference " + path("moving.nii.gz") + " --out " +
                       path("wl.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  const at::Tensor out = io::read_volume(path("wl.nii.gz"), io::PixelKind::Labels).data;
  EXPECT_EQ(at::remainder(out, 10).abs().max().item<int>(), 0);
}

// A mistyped option, in every subcommand, names the option meant: each subcommand's first
// long option of --help with one letter dropped from its middle.
TEST_F(Cli, AMistypedOptionNamesTheOneMeant) {
  EXPECT_NE(run("register --out-feld x.nii.gz").output.find("unknown option --out-feld; did you mean --out-field?"),
            std::string::npos) << run("register --out-feld x.nii.gz").output;
  for (const char* sub : {"register", "apply", "evaluate", "segment", "template", "train", "search", "adapt", "validate", "pack"}) {
    const Result help = run(std::string(sub) + " --help");
    std::string option;
    for (size_t at = help.output.find("--"); at != std::string::npos && option.empty(); at = help.output.find("--", at + 2)) {
      const size_t end = help.output.find_first_not_of("abcdefghijklmnopqrstuvwxyz-", at + 2);
      const std::string name = help.output.substr(at, end - at);
      if (name.size() >= 8 && name != "--ignore_rest" && name != "--version" && name != "--help") option = name;
    }
    ASSERT_FALSE(option.empty()) << sub << ": " << help.output;
    std::string typo = option;
    typo.erase(typo.size() / 2 + 1, 1);
    const Result r = run(std::string(sub) + " " + typo + " x");
    EXPECT_EQ(r.code, 1) << sub << " " << typo << ": " << r.output;
    EXPECT_NE(r.output.find("unknown option " + typo + "; did you mean " + option), std::string::npos)
        << sub << " " << typo << ": " << r.output;
  }
  const Result equals = run("register --iterations=20,10");
  EXPECT_NE(equals.output.find("an option takes its value after a space: --iterations 20,10"), std::string::npos)
      << equals.output;
  const Result far = run("apply --zzzzzzzz 1");
  EXPECT_NE(far.output.find("unknown option --zzzzzzzz (--help lists the options)"), std::string::npos) << far.output;
}

// apply without --reference samples onto the field's own grid (the fixed image's, as
// register wrote it): the same voxels as with the reference given. An affine has no grid.
TEST_F(Cli, ApplyTakesTheGridFromTheField) {
  ASSERT_EQ(run("apply --field " + path("field.nii.gz") + " --moving " + path("moving.nii.gz") + " --reference " +
                path("moving.nii.gz") + " --out " + path("with.nii.gz")).code, 0);
  const Result r = run("apply --field " + path("field.nii.gz") + " --moving " + path("moving.nii.gz") + " --out " +
                       path("without.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  const io::Volume with = io::read_volume(path("with.nii.gz")), without = io::read_volume(path("without.nii.gz"));
  EXPECT_TRUE(at::equal(with.data, without.data));
  EXPECT_EQ(with.geometry.size, without.geometry.size);
  EXPECT_EQ(with.geometry.direction, without.geometry.direction);
  std::ofstream(path("a.tfm")) << "#Insight Transform File V1.0\n#Transform 0\nTransform: AffineTransform_double_3_3\n"
                                  "Parameters: 1 0 0 0 1 0 0 0 1 0 0 0\nFixedParameters: 0 0 0\n";
  const Result affine = run("apply --field " + path("a.tfm") + " --moving " + path("moving.nii.gz") + " --out " +
                            path("o.nii.gz"));
  EXPECT_EQ(affine.code, 2) << affine.output;
  EXPECT_NE(affine.output.find("an affine transform carries no output grid: give the fixed image as --reference"),
            std::string::npos) << affine.output;
  const Result qc = run("apply --field " + path("field.nii.gz") + " --moving " + path("moving.nii.gz") + " --out " +
                        path("o.nii.gz") + " --qc " + path("q.png"));
  EXPECT_EQ(qc.code, 1) << qc.output;
  EXPECT_NE(qc.output.find("--qc draws the result beside the fixed image: give it as --reference"), std::string::npos)
      << qc.output;
  EXPECT_FALSE(fs::exists(path("o.nii.gz")));
}

// Structure sets in apply and evaluate: what goes together, refused before any reading.
TEST_F(Cli, ContoursOptionsGoTogether) {
  Result r = run("apply --field " + path("field.nii.gz") + " --contours rs.dcm --moving " + path("moving.nii.gz") +
                 " --out " + path("o.dcm"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--contours needs --moving (the DICOM series folder it is drawn on) and --reference"),
            std::string::npos) << r.output;
  r = run("apply --field " + path("field.nii.gz") + " --contours rs.dcm --moving a/ --reference b/ --qc q.png --out o.dcm");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--qc is for images; --contours carries a structure set"), std::string::npos) << r.output;
  r = run("apply --field " + path("field.nii.gz") + " --moving " + path("moving.nii.gz") + " --fixed-contours rs.dcm --out " +
          path("o.nii.gz"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--fixed-contours goes with --contours"), std::string::npos) << r.output;
  r = run("evaluate --fixed-contours a.dcm --warped-contours b.dcm");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--fixed-contours, --warped-contours and --series go together"), std::string::npos) << r.output;
  // A missing series folder is bad input naming it.
  r = run("evaluate --fixed-contours a.dcm --warped-contours b.dcm --series " + path("nope"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("nope") + ": --series is the DICOM series folder"), std::string::npos) << r.output;
}

// segment's structure set output: what it needs, and a bad label table named with its line.
TEST_F(Cli, SegmentContoursOptions) {
  Result r = run("segment --target t.nii.gz --atlases a.csv");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("nothing to write: give --out FILE (the fused label map) or"), std::string::npos) << r.output;
  r = run("segment --target t.nii.gz --atlases a.csv --out " + path("o.nii.gz") + " --label-names n.csv");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--label-names names the structures of --out-contours"), std::string::npos) << r.output;
  std::ofstream(path("names.csv")) << "label,name,red,green,blue\n1,Liver,300,0,0\n";
  r = run("segment --target t.nii.gz --atlases a.csv --out-contours " + path("o.dcm") + " --label-names " + path("names.csv"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("names.csv") + ":2: '300' is not a whole number in 0-255"), std::string::npos) << r.output;
}

// --help lists a subcommand's options in groups, the presets as a table.
TEST_F(Cli, HelpListsTheOptionsInGroups) {
  const Result r = run("register --help");
  ASSERT_EQ(r.code, 0) << r.output;
  size_t at = 0;
  for (const char* group : {"Inputs:\n  --fixed <FILE>", "Outputs:\n  --out-warped", "Presets and models:",
                            "\n          ct-cbct    a planning CT", "Settings:\n  --similarity", "Running:"}) {
    const size_t found = r.output.find(group, at);
    EXPECT_NE(found, std::string::npos) << group << " after " << at << ": " << r.output;
    if (found != std::string::npos) at = found;
  }
  for (const char* sub : {"apply", "evaluate", "segment", "template", "train", "search", "adapt", "validate", "pack"}) {
    const Result h = run(std::string(sub) + " --help");
    EXPECT_EQ(h.code, 0) << sub;
    EXPECT_NE(h.output.find(std::string("Usage: autoreg ") + sub), std::string::npos) << h.output;
    EXPECT_NE(h.output.find("Inputs:\n"), std::string::npos) << h.output;
    if (std::string(sub) != "validate") EXPECT_NE(h.output.find("Outputs:\n"), std::string::npos) << h.output;
  }
}

TEST_F(Cli, ExitCodesAndMessages) {
  EXPECT_EQ(run("").code, 1);
  EXPECT_EQ(run("frobnicate").code, 1);
  EXPECT_EQ(run("apply --help").code, 0);
  const std::string common = " --field " + path("field.nii.gz") + " --reference " + path("moving.nii.gz");
  // An unknown option value, an unknown option, a missing required option: usage errors.
  EXPECT_EQ(run("apply --interpolation cubic --moving " + path("moving.nii.gz") + common + " --out " + path("o.nii")).code, 1);
  EXPECT_EQ(run("apply --bogus 1 --moving " + path("moving.nii.gz") + common + " --out " + path("o.nii")).code, 1);
  // Output equal to an input.
  Result r = run("apply --moving " + path("moving.nii.gz") + common + " --out " + path("moving.nii.gz"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("also an input"), std::string::npos) << r.output;
  // A missing input names the file; nothing is written.
  r = run("apply --moving " + path("nope.nii.gz") + common + " --out " + path("o.nii"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find(path("nope.nii.gz")), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("o.nii")));
  // A missing output folder.
  r = run("apply --moving " + path("moving.nii.gz") + common + " --out " + path("no/dir/o.nii"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("output folder"), std::string::npos) << r.output;
  // A reference on another grid than the field.
  io::Geometry other = grid_;
  other.spacing[0] = 3.0;
  io::write_volume(path("other.nii.gz"), {moving_, other});
  r = run("apply --moving " + path("moving.nii.gz") + " --field " + path("field.nii.gz") +
          " --reference " + path("other.nii.gz") + " --out " + path("o.nii"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("grid"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace autoreg::test

namespace autoreg::test {
namespace {

TEST_F(Cli, EvaluateReportsDiceHd95AndFolding) {
  // Fixed: a box of label 5; warped: the same box shifted by one voxel along i (1.2 mm).
  at::Tensor fixed = at::zeros({1, 1, 8, 10, 12}, at::kInt);
  fixed.slice(2, 2, 6).slice(3, 2, 8).slice(4, 2, 8).fill_(5);
  const at::Tensor warped = at::roll(fixed, {1}, {4});
  io::write_volume(path("fl.nii.gz"), {fixed, grid_});
  io::write_volume(path("wl2.nii.gz"), {warped, grid_});
  const Result r = run("evaluate --json --fixed-labels " + path("fl.nii.gz") + " --warped-labels " +
                       path("wl2.nii.gz") + " --field " + path("field.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  // 4×6×6 boxes overlapping in 4×6×5 voxels: Dice 5/6.
  EXPECT_NE(r.output.find("\"dice\": 0.8333"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"hd95_mm\": 1.2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("non_positive_jacobian_percent"), std::string::npos) << r.output;
  EXPECT_EQ(run("evaluate --json --csv --fixed-labels " + path("fl.nii.gz") + " --warped-labels " +
                path("wl2.nii.gz")).code, 1);
  EXPECT_EQ(run("evaluate --labels 5,x --fixed-labels " + path("fl.nii.gz") + " --warped-labels " +
                path("wl2.nii.gz")).code, 1);
}

}  // namespace
}  // namespace autoreg::test

