// Internal to io/: what reading and writing ITK images shares (format registration,
// errors, geometry, atomic writes).
#pragma once

#include <itkImage.h>
#include <itkImageIOBase.h>
#include <itkImageFileWriter.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>

#include "autoreg/io/volume.h"

namespace autoreg::io::detail {

namespace fs = std::filesystem;

void register_formats();

[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what);
}

// The file exists, is readable, and holds a 3-D image of `components` components per
// voxel with as many voxels as its header says (uncompressed NIfTI is checked for
// truncation, which ITK does not notice).
// Returns the ImageIO that read the header, for the reader to reuse.
itk::ImageIOBase::Pointer check_header(const std::string& path, unsigned components);

// The output folder exists and is writable.
void check_output_path(const std::string& path);

template <typename ImageT>
Geometry geometry_of(const ImageT* image) {
  Geometry g;
  const auto size = image->GetLargestPossibleRegion().GetSize();
  for (int a = 0; a < 3; ++a) {
    g.size[a] = static_cast<int64_t>(size[a]);
    g.spacing[a] = image->GetSpacing()[a];
    g.origin[a] = image->GetOrigin()[a];
    for (int c = 0; c < 3; ++c) g.direction[a * 3 + c] = image->GetDirection()(a, c);
  }
  return g;
}

// A new image with the geometry of g, allocated.
template <typename ImageT>
typename ImageT::Pointer allocate_image(const Geometry& g) {
  auto image = ImageT::New();
  typename ImageT::RegionType region;
  typename ImageT::SpacingType spacing;
  typename ImageT::PointType origin;
  typename ImageT::DirectionType direction;
  for (int a = 0; a < 3; ++a) {
    region.SetSize(a, static_cast<itk::SizeValueType>(g.size[a]));
    spacing[a] = g.spacing[a];
    origin[a] = g.origin[a];
    for (int c = 0; c < 3; ++c) direction(a, c) = g.direction[a * 3 + c];
  }
  image->SetRegions(region);
  image->SetSpacing(spacing);
  image->SetOrigin(origin);
  image->SetDirection(direction);
  image->Allocate();
  return image;
}

// Tensor ↔ ITK image of the same geometry. ITK's buffer runs i fastest, then j, then
// k: exactly a contiguous D×H×W tensor, so both directions are one copy.
template <typename Pixel>
typename itk::Image<Pixel, 3>::Pointer to_itk(const Volume& v) {
  auto image = allocate_image<itk::Image<Pixel, 3>>(v.geometry);
  const at::Tensor data = v.data.contiguous();
  std::memcpy(image->GetBufferPointer(), data.data_ptr(), data.nbytes());
  return image;
}

template <typename Pixel>
Volume from_itk(const itk::Image<Pixel, 3>* image, at::ScalarType dtype) {
  Volume v;
  v.geometry = geometry_of(image);
  const auto& s = v.geometry.size;
  v.data = at::empty({1, 1, s[2], s[1], s[0]}, at::TensorOptions().dtype(dtype));
  std::memcpy(v.data.data_ptr(), image->GetBufferPointer(), v.data.nbytes());
  return v;
}

// A temporary name in the target's directory that keeps the target's extension (ITK
// chooses the writer by it).
inline fs::path temporary_for(const fs::path& target) {
  static std::atomic<int> counter{0};
  return target.parent_path() / (".autoreg-tmp-" + std::to_string(::getpid()) + "-" +
                                 std::to_string(counter++) + "-" + target.filename().string());
}

// Writes image to path through a temporary file renamed into place. A .mhd header
// names its .raw data file, so that pair is written under its final names in a
// temporary directory and moved data first, header last.
template <typename ImageT>
void write_image(const std::string& path, const ImageT* image) {
  check_output_path(path);
  const fs::path target(path);
  const bool metaimage_pair = target.extension() == ".mhd";
  const fs::path tmp_dir = metaimage_pair ? temporary_for(target) : fs::path();
  const fs::path tmp = metaimage_pair ? tmp_dir / target.filename() : temporary_for(target);
  std::error_code ec;
  if (metaimage_pair) fs::create_directory(tmp_dir, ec);
  const fs::path cleanup = metaimage_pair ? tmp_dir : tmp;
  try {
    auto writer = itk::ImageFileWriter<ImageT>::New();
    writer->SetFileName(tmp.string());
    writer->SetInput(image);
    writer->SetUseCompression(true);  // where the format compresses (.nii.gz, .mha, .nrrd)
    writer->Update();
    if (metaimage_pair) {
      for (const auto& entry : fs::directory_iterator(tmp_dir)) {
        if (entry.path() != tmp) {
          fs::rename(entry.path(), target.parent_path() / entry.path().filename());
        }
      }
    }
    fs::rename(tmp, target);
  } catch (const itk::ExceptionObject& e) {
    fs::remove_all(cleanup, ec);
    fail(path, std::string("cannot write: ") + e.GetDescription());
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(cleanup, ec);
    fail(path, std::string("cannot write: ") + e.what());
  }
  if (metaimage_pair) fs::remove_all(tmp_dir, ec);
}

}  // namespace autoreg::io::detail
