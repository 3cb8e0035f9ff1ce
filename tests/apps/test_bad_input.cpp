// The bad-input table (docs/cli.md), case by case, as a user meets it: every subcommand given a
// hostile or broken input answers with one line naming the file and the problem and the
// documented exit code, leaves no output (whole or partial) behind, and changes no input.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "autoreg/io/field.h"
#include "autoreg/io/volume.h"
#include "cli.h"

namespace autoreg::test {
namespace {

struct Case {
  std::string name;
  std::string args;                   // the command line, with {d} for the case's folder
  int code;                           // the documented exit code
  std::vector<std::string> messages;  // what the one line must say (file names with {d})
  std::vector<std::string> outputs;   // paths (with {d}) that must not exist afterwards
};

std::string expand(std::string s, const std::string& dir) {
  for (size_t at = s.find("{d}"); at != std::string::npos; at = s.find("{d}", at)) s.replace(at, 3, dir);
  return s;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Every regular file under `dir` (recursively) with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[e.path().string()] = read_bytes(e.path());
  }
  return files;
}

class BadInput : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    d_ = dir_.string();
    // Good inputs the cases start from.
    io::write_volume(path("fixed.nii.gz"), {moving_.flip({4}), grid_});
    std::ofstream(path("pairs.csv")) << "image,labels\n";  // header only
    std::ofstream(path("rs.dcm")) << "not a structure set";  // beside an image that is no series
    // Broken volumes.
    cut("moving.nii.gz", "cut.nii.gz", 0.5);
    cut("field.nii.gz", "cut_field.nii.gz", 0.6);
    cut("labels.nii.gz", "cut_labels.nii.gz", 0.5);
    std::ofstream(path("garbage.nii.gz")) << "this is not an image, whatever its name says";
    mhd("bomb", "DimSize = 100000 100000 100000");
    mhd("neg_spacing", "ElementSpacing = -1 1 1");
    mhd("nan_spacing", "ElementSpacing = nan 1 1");
    mhd("singular", "TransformMatrix = 1 0 0 1 0 0 0 0 1");
    mhd("sheared", "TransformMatrix = 1 0 0 0.5 1 0 0 0 1");
    mhd("inf_voxels", "", std::numeric_limits<float>::infinity());
    mhd("float_labels", "", 1.5f);
    mhd("zero_spacing", "ElementSpacing = 0 1 1");
    // Not 3-D: a 2-D image and a 4-D one (a time series) of as many voxels.
    mhd("flat", "NDims = 2", 0.25f, {"DimSize = 12 80", "ElementSpacing = 1 1", "TransformMatrix = 1 0 0 1", "Offset = 0 0"});
    mhd("series", "NDims = 4", 0.25f,
        {"DimSize = 12 10 4 2", "ElementSpacing = 1 1 1 1", "TransformMatrix = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1", "Offset = 0 0 0 0"});
    // A label map on another grid, a field with a NaN.
    io::Geometry other = grid_;
    other.spacing[0] = 2.5;
    io::write_volume(path("labels_elsewhere.nii.gz"), {(moving_ * 3).floor().to(at::kInt), other});
    at::Tensor nan_field = field_.clone();
    nan_field[0][1][2][3][4] = std::nanf("");
    io::write_displacement_field(path("nan_field.nii.gz"), nan_field, grid_);
    at::Tensor nan_image = moving_.clone();
    nan_image[0][0][1][2][3] = std::nanf("");
    io::write_volume(path("nan_voxels.nii.gz"), {nan_image, grid_});
    // Models, transforms, manifests, genotypes.
    const std::string model = read_bytes(fs::path(AUTOREG_SOURCE_DIR) / "models" / "default.autoreg");
    std::ofstream(path("cut.autoreg"), std::ios::binary) << model.substr(0, model.size() / 2);
    std::ofstream(path("junk.autoreg")) << "AUTOREG MODEL\nversion 2\nnetwork ???\n";
    std::ofstream(path("junk.tfm")) << "#Insight Transform File V1.0\n#Transform 0\nTransform: NoSuchTransform\nParameters: 1 2\n";
    std::ofstream(path("empty.csv")) << "";
    std::ofstream(path("no_labels.csv")) << "image,split\nmoving.nii.gz,train\n";
    std::ofstream(path("missing_image.csv")) << "image,labels\nnope.nii.gz,labels.nii.gz\n";
    std::ofstream(path("good.csv")) << "image,labels\n" << path("moving.nii.gz") << "," << path("labels.nii.gz") << "\n"
                                    << path("fixed.nii.gz") << "," << path("labels.nii.gz") << "\n";
    std::ofstream(path("bad.genotype")) << "conv_3x3 conv_3x3 teleport\n";
    std::ofstream(path("atlas_elsewhere.csv")) << "image,labels\nmoving.nii.gz,labels_elsewhere.nii.gz\n";
    std::ofstream(path("atlas_unlabelled.csv")) << "image,labels\nmoving.nii.gz,\n";
    std::ofstream(path("no_atlases.csv")) << "image,labels\n";
    fs::create_directory(path("a_folder"));
  }

  void cut(const std::string& from, const std::string& to, double keep) {
    fs::copy_file(path(from), path(to));
    fs::resize_file(path(to), uintmax_t(double(fs::file_size(path(from))) * keep));
  }

  // A 12×10×8 MetaImage (header + raw voxels), one header line added or replaced, one
  // voxel set to `value`.
  void mhd(const std::string& name, const std::string& line, float value = 0.25f, const std::vector<std::string>& more = {}) {
    std::map<std::string, std::string> fields = {{"ObjectType", "Image"},          {"NDims", "3"},
                                                 {"DimSize", "12 10 8"},           {"ElementSpacing", "1 1 1"},
                                                 {"TransformMatrix", "1 0 0 0 1 0 0 0 1"}, {"Offset", "0 0 0"},
                                                 {"ElementType", "MET_FLOAT"}};
    std::vector<std::string> lines = more;
    lines.push_back(line);
    for (const auto& l : lines) {
      if (!l.empty()) fields[l.substr(0, l.find(" ="))] = l.substr(l.find("= ") + 2);
    }
    std::ofstream h(path(name + ".mhd"));
    for (const char* key : {"ObjectType", "NDims", "DimSize", "ElementSpacing", "TransformMatrix", "Offset", "ElementType"}) {
      h << key << " = " << fields[key] << "\n";
    }
    h << "ElementDataFile = " << name << ".raw\n";
    std::vector<float> voxels(12 * 10 * 8);
    for (size_t i = 0; i < voxels.size(); ++i) voxels[i] = float(i % 7) * 0.1f;
    voxels[123] = value;
    std::ofstream(path(name + ".raw"), std::ios::binary)
        .write(reinterpret_cast<const char*>(voxels.data()), std::streamsize(voxels.size() * sizeof(float)));
  }

  // Runs a case and checks all that docs/cli.md promises of it.
  void check(const Case& c) {
    SCOPED_TRACE(c.name);
    const auto before = snapshot(dir_);
    const Result r = run(expand(c.args, d_));
    EXPECT_EQ(r.code, c.code) << r.output;
    // One line: the message (progress bars are drawn only on a terminal).
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_EQ(r.output.rfind("autoreg ", 0), 0u) << r.output;
    for (const auto& m : c.messages) EXPECT_NE(r.output.find(expand(m, d_)), std::string::npos) << "'" << m << "' not in: " << r.output;
    for (const auto& o : c.outputs) EXPECT_FALSE(fs::exists(expand(o, d_))) << o;
    const auto after = snapshot(dir_);
    for (const auto& [file, bytes] : after) {
      EXPECT_EQ(file.find(".autoreg-tmp"), std::string::npos) << "left behind: " << file;
      EXPECT_TRUE(before.count(file)) << "new file: " << file;
      if (!before.count(file)) fs::remove(file);  // the next case starts clean
    }
    for (const auto& [file, bytes] : before) {
      const auto it = after.find(file);
      EXPECT_TRUE(it != after.end() && it->second == bytes) << "input changed or removed: " << file;
    }
  }

  std::string d_;
};

const std::string kOuts = " --out-warped {d}/w.nii.gz --out-field {d}/f.nii.gz";
const std::vector<std::string> kRegisterOutputs = {"{d}/w.nii.gz", "{d}/f.nii.gz", "{d}/l.nii.gz"};

std::string reg(const std::string& fixed, const std::string& moving, const std::string& more = "") {
  return "register --fixed {d}/" + fixed + " --moving {d}/" + moving + kOuts + more;
}

TEST_F(BadInput, EveryCaseOfTheReadmesTable) {
  const std::vector<Case> cases = {
      {"missing input", reg("nope.nii.gz", "moving.nii.gz"), 2, {"{d}/nope.nii.gz: no such file"}, kRegisterOutputs},
      {"gzip cut short", reg("fixed.nii.gz", "cut.nii.gz"), 2, {"{d}/cut.nii.gz: truncated"}, kRegisterOutputs},
      {"not an image", reg("garbage.nii.gz", "moving.nii.gz"), 2, {"{d}/garbage.nii.gz: not a readable image"}, kRegisterOutputs},
      {"memory bomb header", reg("bomb.mhd", "moving.nii.gz"), 2, {"{d}/bomb.mhd: declares 100000×100000×100000 voxels", "more than the limit"}, kRegisterOutputs},
      {"zero spacing", reg("zero_spacing.mhd", "moving.nii.gz"), 2, {"{d}/zero_spacing.mhd: spacing of axis 0 is 0"}, kRegisterOutputs},
      {"negative spacing", reg("fixed.nii.gz", "neg_spacing.mhd"), 2, {"{d}/neg_spacing.mhd: spacing"}, kRegisterOutputs},
      // MetaIO itself refuses to parse "nan" as a spacing.
      {"NaN spacing", reg("nan_spacing.mhd", "moving.nii.gz"), 2, {"{d}/nan_spacing.mhd: corrupt or truncated image header"}, kRegisterOutputs},
      {"singular direction", reg("singular.mhd", "moving.nii.gz"), 2, {"{d}/singular.mhd: direction"}, kRegisterOutputs},
      {"non-orthogonal direction", reg("fixed.nii.gz", "sheared.mhd"), 2, {"{d}/sheared.mhd: direction"}, kRegisterOutputs},
      {"NaN voxels (NIfTI, which ITK reads as 0)", reg("fixed.nii.gz", "nan_voxels.nii.gz"), 2, {"{d}/nan_voxels.nii.gz: contains 1 non-finite"}, kRegisterOutputs},
      {"infinite voxels", reg("inf_voxels.mhd", "moving.nii.gz"), 2, {"{d}/inf_voxels.mhd: contains non-finite"}, kRegisterOutputs},
      {"non-integer float labels", reg("fixed.nii.gz", "moving.nii.gz", " --moving-labels {d}/float_labels.mhd --out-labels {d}/l.nii.gz"), 2,
       {"{d}/float_labels.mhd: ", "not an integer"}, kRegisterOutputs},
      {"2-D image", reg("fixed.nii.gz", "flat.mhd"), 2, {"{d}/flat.mhd: is a 2-D image"}, kRegisterOutputs},
      {"4-D image", reg("series.mhd", "moving.nii.gz"), 2, {"{d}/series.mhd: is a 4-D image"}, kRegisterOutputs},
      {"vector image as an image", reg("field.nii.gz", "moving.nii.gz"), 2, {"{d}/field.nii.gz: has 3 components"}, kRegisterOutputs},
      {"labels on another grid", reg("fixed.nii.gz", "moving.nii.gz", " --moving-labels {d}/labels_elsewhere.nii.gz --out-labels {d}/l.nii.gz"), 2,
       {"{d}/labels_elsewhere.nii.gz: ", "grid"}, kRegisterOutputs},
      {"contours on an image that is no DICOM series", reg("fixed.nii.gz", "moving.nii.gz", " --moving-contours {d}/rs.dcm --out-contours {d}/c.dcm"), 2,
       {"{d}/rs.dcm: an RT Structure Set is drawn on a DICOM series", "{d}/moving.nii.gz is a file"}, {"{d}/w.nii.gz", "{d}/f.nii.gz", "{d}/c.dcm"}},
      {"labels out from nothing", reg("fixed.nii.gz", "moving.nii.gz", " --out-labels {d}/l.nii.gz"), 1,
       {"--out-labels writes the warped --moving-labels, or the structures of --moving-contours"}, kRegisterOutputs},
      {"contours out without contours in", reg("fixed.nii.gz", "moving.nii.gz", " --out-contours {d}/c.dcm"), 1,
       {"--out-contours writes the structures carried from --moving-contours"}, {"{d}/w.nii.gz", "{d}/f.nii.gz", "{d}/c.dcm"}},
      {"output is a folder", "register --fixed {d}/fixed.nii.gz --moving {d}/moving.nii.gz --out-warped {d}/a_folder --out-field {d}/f.nii.gz", 2,
       {"{d}/a_folder: ", "is a folder"}, {"{d}/f.nii.gz"}},
      {"output folder missing", "register --fixed {d}/fixed.nii.gz --moving {d}/moving.nii.gz --out-warped {d}/w.nii.gz --out-field {d}/no/f.nii.gz", 2,
       {"{d}/no/f.nii.gz: output folder does not exist"}, {"{d}/w.nii.gz"}},
      {"output is an input", "register --fixed {d}/fixed.nii.gz --moving {d}/moving.nii.gz --out-warped {d}/moving.nii.gz --out-field {d}/f.nii.gz", 1,
       {"also an input"}, {"{d}/f.nii.gz"}},
      {"model cut short", reg("fixed.nii.gz", "moving.nii.gz", " --model {d}/cut.autoreg"), 2, {"{d}/cut.autoreg: "}, kRegisterOutputs},
      {"not a model", reg("fixed.nii.gz", "moving.nii.gz", " --model {d}/junk.autoreg"), 2, {"{d}/junk.autoreg: "}, kRegisterOutputs},
      {"field cut short", "apply --moving {d}/moving.nii.gz --field {d}/cut_field.nii.gz --reference {d}/fixed.nii.gz --out {d}/o.nii.gz", 2,
       {"{d}/cut_field.nii.gz: truncated"}, {"{d}/o.nii.gz"}},
      {"field with NaN", "apply --moving {d}/moving.nii.gz --field {d}/nan_field.nii.gz --reference {d}/fixed.nii.gz --out {d}/o.nii.gz", 2,
       {"{d}/nan_field.nii.gz: contains 1 non-finite"}, {"{d}/o.nii.gz"}},
      {"unknown transform", "apply --moving {d}/moving.nii.gz --field {d}/junk.tfm --reference {d}/fixed.nii.gz --out {d}/o.nii.gz", 2,
       {"{d}/junk.tfm: "}, {"{d}/o.nii.gz"}},
      {"reference memory bomb", "apply --moving {d}/moving.nii.gz --field {d}/field.nii.gz --reference {d}/bomb.mhd --out {d}/o.nii.gz", 2,
       {"{d}/bomb.mhd: declares"}, {"{d}/o.nii.gz"}},
      {"labels cut short", "evaluate --fixed-labels {d}/cut_labels.nii.gz --warped-labels {d}/labels.nii.gz", 2, {"{d}/cut_labels.nii.gz: truncated"}, {}},
      {"evaluate float labels", "evaluate --fixed-labels {d}/labels.nii.gz --warped-labels {d}/float_labels.mhd", 2,
       {"{d}/float_labels.mhd: ", "not an integer"}, {}},
      {"empty manifest", "train --manifest {d}/empty.csv --out {d}/m.autoreg --steps 1", 2, {"{d}/empty.csv"}, {"{d}/m.autoreg"}},
      {"manifest of one subject, no augmentation", "train --manifest {d}/no_labels.csv --out {d}/m.autoreg --steps 1 --no-augment", 2,
       {"{d}/no_labels.csv: pairwise training needs at least two training subjects (or one, with augmentation)"},
       {"{d}/m.autoreg", "{d}/m.autoreg.cache"}},
      {"manifest names a missing file", "train --manifest {d}/missing_image.csv --out {d}/m.autoreg --steps 1", 2, {"nope.nii.gz"}, {"{d}/m.autoreg"}},
      {"malformed genotype", "train --manifest {d}/good.csv --genotype {d}/bad.genotype --out {d}/m.autoreg --steps 1", 2,
       {"{d}/bad.genotype"}, {"{d}/m.autoreg"}},
      {"search on a manifest of no subjects", "search --manifest {d}/pairs.csv --out {d}/s --steps 1", 2, {"{d}/pairs.csv"}, {"{d}/s"}},
      {"atlas labels on another grid", "segment --atlases {d}/atlas_elsewhere.csv --target {d}/fixed.nii.gz --out {d}/seg.nii.gz", 2,
       {"{d}/labels_elsewhere.nii.gz: not on the grid of its atlas image"}, {"{d}/seg.nii.gz"}},
      {"atlas without labels", "segment --atlases {d}/atlas_unlabelled.csv --target {d}/fixed.nii.gz --out {d}/seg.nii.gz", 2,
       {"{d}/atlas_unlabelled.csv:2: an atlas needs an image and a label map"}, {"{d}/seg.nii.gz"}},
      {"no atlases", "segment --atlases {d}/no_atlases.csv --target {d}/fixed.nii.gz --out {d}/seg.nii.gz", 2,
       {"{d}/no_atlases.csv: the manifest lists no subjects"}, {"{d}/seg.nii.gz"}},
      {"2-D target", "segment --atlases {d}/good.csv --target {d}/flat.mhd --out {d}/seg.nii.gz", 2,
       {"{d}/flat.mhd: is a 2-D image"}, {"{d}/seg.nii.gz"}},
  };
  for (const Case& c : cases) check(c);
}

// A full file system, made by the test as a one-page tmpfs (skipped where mounting is not
// allowed: not root, or a container without CAP_SYS_ADMIN).
TEST_F(BadInput, AnOutputOnAFullFileSystem) {
  const std::string full = path("full");
  fs::create_directory(full);
  if (std::system(("mount -t tmpfs -o size=4k tmpfs " + full + " 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here";
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { (void)std::system(("umount " + dir).c_str()); }
  } unmount{full};
  check({"output on a full file system",
         "register --fixed {d}/fixed.nii.gz --moving {d}/moving.nii.gz --affine-iterations 2,2 --iterations 2,2"
         " --out-warped {d}/full/w.nii.gz --out-field {d}/full/f.nii.gz",
         2, {"{d}/full/", "No space left on device"}, {"{d}/full/w.nii.gz", "{d}/full/f.nii.gz"}});
  check({"apply on a full file system",
         "apply --moving {d}/moving.nii.gz --field {d}/field.nii.gz --reference {d}/fixed.nii.gz --out {d}/full/o.nii",
         2, {"{d}/full/o.nii", "No space left on device"}, {"{d}/full/o.nii"}});
}

}  // namespace
}  // namespace autoreg::test
