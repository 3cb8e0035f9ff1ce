// Volume I/O: round trips keep values and geometry in every format, the DICOM series
// of the shared data reads with its geometry, bad files fail with the file's name.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <itkImage.h>
#include <itkImageFileWriter.h>
#include <itkMetaImageIOFactory.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "autoreg/io/volume.h"
#include "shared_data.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;
using io::Geometry;
using io::PixelKind;
using io::Volume;

class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Tests that write with ITK directly set ITK up themselves (io/ registers its
    // formats only when first called).
    itk::MetaImageIOFactory::RegisterOneFactory();
    dir_ = fs::temp_directory_path() /
           ("autoreg-io-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Only the named files, no temporaries, are left in the folder.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

// Oblique (rotated about a tilted axis) and anisotropic, with a non-trivial origin.
Geometry oblique_geometry() {
  Geometry g;
  g.size = {7, 6, 5};
  g.spacing = {0.7, 1.3, 2.5};
  g.origin = {-12.5, 30.25, 7.0};
  const double ax[3] = {1 / std::sqrt(3.0), 1 / std::sqrt(3.0), 1 / std::sqrt(3.0)};
  const double t = 0.4, c = std::cos(t), s = std::sin(t);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) {
      const double cross[3][3] = {{0, -ax[2], ax[1]}, {ax[2], 0, -ax[0]}, {-ax[1], ax[0], 0}};
      g.direction[r * 3 + k] = (r == k ? c : 0) + (1 - c) * ax[r] * ax[k] + s * cross[r][k];
    }
  return g;
}

void expect_same_geometry(const Geometry& a, const Geometry& b, double tol) {
  EXPECT_EQ(a.size, b.size);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(a.spacing[i], b.spacing[i], tol) << "spacing " << i;
    EXPECT_NEAR(a.origin[i], b.origin[i], tol) << "origin " << i;
  }
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(a.direction[i], b.direction[i], tol) << "direction " << i;
}

class RoundTrip : public IoTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(RoundTrip, KeepsValuesAndGeometry) {
  const std::string ext = GetParam();
  at::manual_seed(1);
  const Geometry g = oblique_geometry();
  const Volume v{at::randn({1, 1, 5, 6, 7}), g};
  const std::string file = path("volume" + ext);
  io::write_volume(file, v);
  const Volume back = io::read_volume(file);
  EXPECT_TRUE(at::equal(back.data, v.data));
  // NIfTI stores the geometry in float32 (sform); the others in text with full precision.
  expect_same_geometry(back.geometry, g, ext.rfind(".nii", 0) == 0 ? 1e-5 : 1e-9);
  // Labels: integers beyond uint8 and negative values survive.
  const Volume labels{at::randint(-3, 3000, {1, 1, 5, 6, 7}, at::kInt), g};
  io::write_volume(path("labels" + ext), labels);
  EXPECT_TRUE(at::equal(io::read_volume(path("labels" + ext), PixelKind::Labels).data, labels.data));
  for (const auto& name : listing()) EXPECT_EQ(name.find(".autoreg-tmp"), std::string::npos) << name;
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip,
                         ::testing::Values(".nii.gz", ".nii", ".mha", ".mhd", ".nrrd", ".nhdr"),
                         [](const auto& info) {
                           std::string n = info.param.substr(1);
                           std::replace(n.begin(), n.end(), '.', '_');
                           return n;
                         });

TEST_F(IoTest, TensorIndexIsItkIndexReversed) {
  // An ITK image with one bright voxel at index (i, j, k) = (4, 2, 1), written by ITK
  // itself, reads as a tensor with that voxel at [k][j][i].
  using Image = itk::Image<float, 3>;
  auto image = Image::New();
  Image::RegionType region;
  region.SetSize(0, 5);
  region.SetSize(1, 3);
  region.SetSize(2, 2);
  image->SetRegions(region);
  image->Allocate(true);
  image->SetPixel({{4, 2, 1}}, 7.0f);
  itk::WriteImage(image, path("index.mha"));
  const Volume back = io::read_volume(path("index.mha"));
  EXPECT_EQ(back.data.sizes(), (std::vector<int64_t>{1, 1, 2, 3, 5}));
  EXPECT_EQ(back.data[0][0][1][2][4].item<float>(), 7.0f);
  EXPECT_EQ(back.data.sum().item<float>(), 7.0f);
  EXPECT_EQ(back.geometry.size, (std::array<int64_t, 3>{5, 3, 2}));
}

TEST_F(IoTest, BadInputsNameTheFile) {
  auto expect_error = [](const std::function<void()>& f, const std::string& file,
                         const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "no error for " << file;
    } catch (const io::IoError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(file, 0), 0u) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  };
  expect_error([&] { io::read_volume(path("missing.nii.gz")); }, path("missing.nii.gz"), "no such file");
  std::ofstream(path("garbage.nii.gz")) << "not an image";
  expect_error([&] { io::read_volume(path("garbage.nii.gz")); }, path("garbage.nii.gz"), "image");
  // A truncated file: a valid header whose voxels are cut off.
  io::write_volume(path("whole.nii"), {at::randn({1, 1, 5, 6, 7}), oblique_geometry()});
  fs::copy_file(path("whole.nii"), path("cut.nii"));
  fs::resize_file(path("cut.nii"), fs::file_size(path("whole.nii")) / 2);
  expect_error([&] { io::read_volume(path("cut.nii")); }, path("cut.nii"), "");
  // A .nii.gz cut short (a download that stopped): zlib's gzread gives ITK a short read
  // without an error; the stream is read to its end marker. Cut in the middle of the
  // voxels, and after the voxels' last byte but before the gzip trailer.
  io::write_volume(path("whole.nii.gz"), {at::randn({1, 1, 5, 6, 7}), oblique_geometry()});
  const auto gz_size = fs::file_size(path("whole.nii.gz"));
  for (const auto keep : {gz_size / 2, gz_size - 4}) {
    fs::copy_file(path("whole.nii.gz"), path("cut.nii.gz"), fs::copy_options::overwrite_existing);
    fs::resize_file(path("cut.nii.gz"), keep);
    expect_error([&] { io::read_volume(path("cut.nii.gz")); }, path("cut.nii.gz"), "truncated");
    expect_error([&] { io::read_volume(path("cut.nii.gz"), PixelKind::Labels); }, path("cut.nii.gz"), "truncated");
  }
  // A flipped bit in the compressed voxels fails the member's CRC.
  {
    fs::copy_file(path("whole.nii.gz"), path("flip.nii.gz"));
    std::fstream f(path("flip.nii.gz"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(gz_size / 2));
    const char c = char(f.get());
    f.seekp(std::streamoff(gz_size / 2));
    f.put(char(c ^ 0x10));
  }
  expect_error([&] { io::read_volume(path("flip.nii.gz")); }, path("flip.nii.gz"), "corrupt");
  EXPECT_NO_THROW(io::read_volume(path("whole.nii.gz")));
  // A header that declares more voxels than the limit: refused before anything is
  // allocated, naming the size (a MetaImage header over a one-byte raw file).
  std::ofstream(path("bomb.raw")) << "x";
  std::ofstream(path("bomb.mhd")) << "ObjectType = Image\nNDims = 3\nDimSize = 100000 100000 100000\n"
                                     "ElementType = MET_FLOAT\nElementDataFile = bomb.raw\n";
  expect_error([&] { io::read_volume(path("bomb.mhd")); }, path("bomb.mhd"), "100000×100000×100000 voxels");
  expect_error([&] { io::read_geometry(path("bomb.mhd")); }, path("bomb.mhd"), "more than the limit");
  io::set_max_volume_bytes(5 * 6 * 7 * 4 - 1);
  expect_error([&] { io::read_volume(path("whole.nii.gz")); }, path("whole.nii.gz"), "7×6×5 voxels");
  io::set_max_volume_bytes(5 * 6 * 7 * 4);
  EXPECT_NO_THROW(io::read_volume(path("whole.nii.gz")));
  io::set_max_volume_bytes(0);
  // A 2-D image.
  auto image2d = itk::Image<float, 2>::New();
  itk::Image<float, 2>::RegionType region;
  region.SetSize(0, 4);
  region.SetSize(1, 4);
  image2d->SetRegions(region);
  image2d->Allocate(true);
  itk::WriteImage(image2d, path("flat.mha"));
  expect_error([&] { io::read_volume(path("flat.mha")); }, path("flat.mha"), "2-D");
  // A 4-D image (a time series).
  auto image4d = itk::Image<float, 4>::New();
  itk::Image<float, 4>::RegionType region4;
  for (unsigned d = 0; d < 4; ++d) region4.SetSize(d, 3);
  image4d->SetRegions(region4);
  image4d->Allocate(true);
  itk::WriteImage(image4d, path("series.nii.gz"));
  expect_error([&] { io::read_volume(path("series.nii.gz")); }, path("series.nii.gz"), "4-D");
  // Non-finite voxels.
  at::Tensor nan = at::zeros({1, 1, 2, 2, 2});
  nan[0][0][1][1][1] = std::nan("");
  Geometry g;
  g.size = {2, 2, 2};
  io::write_volume(path("nan.mha"), {nan, g});
  expect_error([&] { io::read_volume(path("nan.mha")); }, path("nan.mha"), "non-finite");
  // Outputs: a missing folder, an unknown format (and nothing left behind).
  expect_error([&] { io::write_volume(path("no/such/dir/x.nii"), {nan, g}); },
               path("no/such/dir/x.nii"), "folder does not exist");
  expect_error([&] { io::write_volume(path("x.unknownformat"), {nan, g}); }, path("x.unknownformat"),
               "cannot write");
  for (const auto& name : listing()) {
    EXPECT_EQ(name.find(".autoreg-tmp"), std::string::npos) << name;
    EXPECT_NE(name, "x.unknownformat");
  }
}

TEST(SharedData, DicomSeriesReadsWithGeometry) {
  const std::string dir = (shared_data() / "dicom" / "mprage_child").string();
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no test data at " << dir;
  const Volume v = io::read_volume(dir);
  // 176 sagittal slices of 220×220 at 1 mm (the data's README).
  std::array<int64_t, 3> size = v.geometry.size;
  std::sort(size.begin(), size.end());
  EXPECT_EQ(size, (std::array<int64_t, 3>{176, 220, 220}));
  for (double s : v.geometry.spacing) EXPECT_NEAR(s, 1.0, 0.05);
  // The direction is a rotation: orthonormal columns.
  const auto& d = v.geometry.direction;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      const double dot = d[a] * d[b] + d[3 + a] * d[3 + b] + d[6 + a] * d[6 + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-4);
    }
  EXPECT_GT(v.data.max().item<float>(), 0.0f);
}

}  // namespace
}  // namespace autoreg::test
