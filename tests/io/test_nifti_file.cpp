// autoreg's own NIfTI writer (io/src/nifti_file.h) against ITK's: for volumes, label maps
// and displacement fields on grids of every kind of orientation, the header it writes
// says what ITK 5.2's NiftiImageIO says for the same image (dims, type, intent, spacing,
// qform and sform), the voxels are the same bytes, and ITK reads the file back to the
// same geometry and values; a grid whose axes are not orthonormal is written by ITK.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "itk_bridge.h"
#include "nifti_file.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;
using io::Geometry;

class NiftiFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-nifti-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    io::detail::register_formats();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string contents(const std::string& file) {
  gzFile in = gzopen(file.c_str(), "rb");  // reads plain files as they are
  EXPECT_NE(in, nullptr) << file;
  std::string out;
  char buffer[1 << 15];
  int n;
  while ((n = gzread(in, buffer, sizeof buffer)) > 0) out.append(buffer, size_t(n));
  gzclose(in);
  return out;
}

template <typename T>
T at_offset(const std::string& bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

// Every header field ITK reads (and the rest of the 352 bytes) agree; floats of the
// orientation to float precision.
void expect_same_header(const std::string& ours, const std::string& itk) {
  ASSERT_GE(ours.size(), 352u);
  ASSERT_GE(itk.size(), 352u);
  for (size_t offset = 0; offset < 352; ++offset) {
    const bool orientation_float = offset >= 256 && offset < 328;  // quatern, qoffset, srow
    const bool qfac = offset >= 76 && offset < 80;
    if (orientation_float || qfac) continue;
    EXPECT_EQ(ours[offset], itk[offset]) << "header byte " << offset;
  }
  for (size_t offset = 256; offset < 328; offset += 4) {
    EXPECT_NEAR(at_offset<float>(ours, offset), at_offset<float>(itk, offset), 2e-6 * (1 + std::abs(at_offset<float>(itk, offset))))
        << "header float at " << offset;
  }
  EXPECT_EQ(at_offset<float>(ours, 76), at_offset<float>(itk, 76)) << "qfac";
}

template <typename ImageT>
void write_with_itk(const std::string& file, const ImageT* image) {
  auto writer = itk::ImageFileWriter<ImageT>::New();
  writer->SetFileName(file);
  writer->SetInput(image);
  writer->Update();
}

Geometry grid(const std::string& orientation) {
  Geometry g;
  g.size = {7, 6, 5};
  g.spacing = {0.9, 1.25, 2.0};
  g.origin = {-12.5, 30.25, 7.0};
  if (orientation != "oblique") return io::with_orientation(g, orientation);
  const double t = 0.4, c = std::cos(t), s = std::sin(t);
  const double ax[3] = {2.0 / 3, -1.0 / 3, 2.0 / 3};  // a rotation about a tilted axis
  const double cross[3][3] = {{0, -ax[2], ax[1]}, {ax[2], 0, -ax[0]}, {-ax[1], ax[0], 0}};
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) g.direction[r * 3 + k] = (r == k ? c : 0) + (1 - c) * ax[r] * ax[k] + s * cross[r][k];
  return g;
}

const char* kOrientations[] = {"LPS", "RAS", "ASL", "LIA", "PIR", "oblique"};

TEST_F(NiftiFile, AVolumeIsWrittenAsITKWritesIt) {
  for (const char* o : kOrientations) {
    SCOPED_TRACE(o);
    const Geometry g = grid(o);
    const io::Volume v{at::randn({1, 1, 5, 6, 7}), g};
    ASSERT_TRUE(io::detail::writes_nifti(path("a.nii"), g));
    io::write_volume(path("ours.nii"), v);
    write_with_itk(path("itk.nii"), io::detail::to_itk<float>(v).GetPointer());
    const std::string ours = contents(path("ours.nii")), itk = contents(path("itk.nii"));
    expect_same_header(ours, itk);
    EXPECT_EQ(ours.substr(352), itk.substr(352));
    io::write_volume(path("ours.nii.gz"), v);
    EXPECT_EQ(contents(path("ours.nii.gz")), ours);
    const io::Volume back = io::read_volume(path("ours.nii.gz"));
    EXPECT_TRUE(io::same_grid(back.geometry, g));
    EXPECT_TRUE(at::equal(back.data, v.data));
  }
}

TEST_F(NiftiFile, ALabelMapKeepsItsIntegers) {
  const Geometry g = grid("LIA");
  const io::Volume labels{at::randint(-3, 2000, {1, 1, 5, 6, 7}, at::kInt), g};
  io::write_volume(path("ours.nii.gz"), labels);
  write_with_itk(path("itk.nii"), io::detail::to_itk<int32_t>(labels).GetPointer());
  const std::string ours = contents(path("ours.nii.gz")), itk = contents(path("itk.nii"));
  expect_same_header(ours, itk);
  EXPECT_EQ(ours.substr(352), itk.substr(352));
  EXPECT_TRUE(at::equal(io::read_volume(path("ours.nii.gz"), io::PixelKind::Labels).data, labels.data));
}

TEST_F(NiftiFile, AFieldIsWrittenAsITKWritesItsVectorImage) {
  using FieldImage = itk::Image<itk::Vector<float, 3>, 3>;
  for (const char* o : kOrientations) {
    SCOPED_TRACE(o);
    const Geometry g = grid(o);
    const at::Tensor voxels = at::randn({1, 3, 5, 6, 7}) * 2;
    io::write_displacement_field(path("ours.nii"), voxels, g);
    write_with_itk(path("itk.nii"), io::detail::field_image<FieldImage>(voxels, g, at::kFloat).GetPointer());
    const std::string ours = contents(path("ours.nii")), itk = contents(path("itk.nii"));
    expect_same_header(ours, itk);
    ASSERT_EQ(ours.size(), itk.size());
    const int64_t n = 3 * 5 * 6 * 7;
    at::Tensor a = at::empty({n}), b = at::empty({n});
    std::memcpy(a.data_ptr(), ours.data() + 352, size_t(n) * 4);
    std::memcpy(b.data_ptr(), itk.data() + 352, size_t(n) * 4);
    EXPECT_TRUE(at::allclose(a, b, 1e-6, 1e-5));
    io::write_displacement_field(path("ours.nii.gz"), voxels, g);
    Geometry back;
    const at::Tensor read = io::read_displacement_field(path("ours.nii.gz"), &back);
    EXPECT_TRUE(io::same_grid(back, g));
    EXPECT_TRUE(at::allclose(read, voxels, 1e-5, 1e-5));
  }
}

TEST_F(NiftiFile, VolumesOfManyBlocksReadBackWhole) {
  Geometry g = grid("RAS");
  g.size = {160, 128, 120};  // 9.4 MiB of floats: two compressed blocks per component
  const at::Tensor voxels = at::rand({1, 3, 120, 128, 160});
  io::write_displacement_field(path("f.nii.gz"), voxels, g);
  EXPECT_TRUE(at::allclose(io::read_displacement_field(path("f.nii.gz")), voxels, 1e-5, 1e-6));
  const io::Volume v{voxels.slice(1, 0, 1).contiguous(), g};
  io::write_volume(path("v.nii.gz"), v);
  EXPECT_TRUE(at::equal(io::read_volume(path("v.nii.gz")).data, v.data));
}

TEST_F(NiftiFile, ASkewedGridIsLeftToITK) {
  Geometry g = grid("LPS");
  g.direction = {1, 0.2, 0, 0, 1, 0, 0, 0, 1};
  EXPECT_FALSE(io::detail::writes_nifti(path("a.nii.gz"), g));
  EXPECT_FALSE(io::detail::writes_nifti(path("a.mha"), grid("LPS")));
  EXPECT_TRUE(io::detail::writes_nifti(path("a.nii.gz"), grid("LPS")));
}

TEST_F(NiftiFile, AnUnwritableFolderIsNamed) {
  const io::Volume v{at::zeros({1, 1, 5, 6, 7}), grid("LPS")};
  try {
    io::write_volume(path("missing/v.nii.gz"), v);
    FAIL() << "no error";
  } catch (const io::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("missing/v.nii.gz"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("missing")));
}

}  // namespace
}  // namespace autoreg::test
