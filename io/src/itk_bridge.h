// Internal to io/: what reading and writing ITK images shares (format registration,
// errors, geometry, atomic writes).
#pragma once

#include <itkImage.h>
#include <itkImageIOBase.h>
#include <itkImageFileWriter.h>
#include <itkTransformFileReader.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <functional>
#include <cstring>
#include <filesystem>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/volume.h"

namespace autoreg::io::detail {

namespace fs = std::filesystem;

void register_formats();

// ITK's exception text as one line: without its "ITK ERROR: Class(0x…): " prefixes,
// without the file name it repeats, without "Reason: " lines carrying a stale errno, lines
// joined by "; ".
std::string itk_reason(const itk::ExceptionObject& e, const std::string& path);

[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what);
}

// The file exists, is readable, and holds a 3-D image of `components` components per
// voxel with as many voxels as its header says (uncompressed NIfTI is checked for
// truncation, which ITK does not notice).
// Returns the ImageIO that read the header, for the reader to reuse.
itk::ImageIOBase::Pointer check_header(const std::string& path, unsigned components);

// Checks what ITK's image readers do not survive, before they read `path`'s header: NIfTI
// headers with non-finite orientation numbers (abort() in VNL), MetaImage headers naming
// a data file that does not exist (a bad free in MetaIO). Throws IoError naming the file.
void check_header_bytes(const std::string& path);

// Checks an ITK .h5 transform file's parameters before ITK reads it: finite numbers, and a
// displacement field's declared size matching its parameters (io/src/hdf5_check.cpp).
// Throws IoError naming the file.
void check_hdf5_transform(const std::string& path);
// Checks that each Matlab v4 matrix of a .mat transform file fits in the file before ITK
// allocates what its header declares. Throws IoError naming the file.
void check_matlab_transform(const std::string& path);

// Runs read() (an ITK reader's Update on `path`, whose header check_header returned) and,
// for a .gz or NIfTI file, reads the file to its end on a second thread meanwhile
// (check_input_stream): zlib's gzread hands ITK a short read without an error when the
// file was cut short, and ITK's NIfTI library reads NaN voxels as 0. Throws IoError naming
// the file ("truncated", "corrupt", "non-finite").
void read_whole(const std::string& path, const itk::ImageIOBase& header, const std::function<void()>& read);

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

// A voxel displacement field (1×3×D×H×W on `grid`) as an ITK vector image of physical
// LPS mm vectors of `dtype` (float32 or float64, matching FieldT's components). ITK stores
// a voxel's three components together: 1×3×D×H×W → D×H×W×3. Shared by the file writer
// (field.cpp) and the in-memory conversion (itk_image.cpp).
template <typename FieldT>
typename FieldT::Pointer field_image(const at::Tensor& voxels, const Geometry& grid, at::ScalarType dtype) {
  const at::Tensor xyz =
      voxel_to_physical(voxels.to(dtype).cpu(), grid).squeeze(0).permute({1, 2, 3, 0}).contiguous();
  auto image = allocate_image<FieldT>(grid);
  std::memcpy(image->GetBufferPointer(), xyz.data_ptr(), xyz.nbytes());
  return image;
}

// Runs write(tmp) for a temporary path beside `path` that keeps its extension (ITK
// chooses the writer by it), then renames the result into place; on any failure the
// temporary is removed and an IoError names `path`. A .mhd header names its .raw data
// file, so that pair is written under its final names in a temporary directory and
// moved data first, header last.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

// The one transform an ITK transform file holds, as type T (e.g. an affine base class
// or DisplacementFieldTransform): an IoError naming the file when it is missing,
// unreadable, holds several transforms, or one of another kind (`what` names the kind
// wanted in that message).
template <typename T>
typename T::ConstPointer read_transform(const std::string& path, const char* what);

// Writes a transform to an ITK transform file (.tfm, .txt, .mat, .h5) atomically.
void write_transform(const std::string& path, const itk::TransformBaseTemplate<double>* transform);

// Calls `write(file, compress)` to write `tmp`: for .nii.gz, ITK writes the NIfTI bytes
// uncompressed beside it and they are gzipped in parallel blocks (gzip_file.h; writing a
// 256×256×160 pair's three outputs took 4.3–5.2 s instead of 9.9–11.3 s), the plain file
// then removed; other formats are written by ITK itself, compressed where they compress.
void write_compressed(const std::string& tmp, const std::function<void(const std::string&, bool)>& write);

// Writes an ITK image to path atomically (compressed where the format compresses).
template <typename ImageT>
void write_image(const std::string& path, const ImageT* image) {
  write_atomically(path, [&](const std::string& tmp) {
    write_compressed(tmp, [&](const std::string& file, bool compress) {
      auto writer = itk::ImageFileWriter<ImageT>::New();
      writer->SetFileName(file);
      writer->SetInput(image);
      writer->SetUseCompression(compress);  // .mha, .nrrd (and .nii.gz when ITK compresses)
      // zlib's fastest level: 256³ float volumes and fields compress ~4× faster than at
      // the default level, and barely larger (float noise does not compress well).
      writer->SetCompressionLevel(1);
      writer->Update();
    });
  });
}

// The file's transforms (one reader for every read_transform instantiation).
const itk::TransformFileReaderTemplate<double>::TransformListType* read_transform_list(
    const std::string& path, itk::TransformFileReaderTemplate<double>::Pointer& reader);

template <typename T>
typename T::ConstPointer read_transform(const std::string& path, const char* what) {
  itk::TransformFileReaderTemplate<double>::Pointer reader;
  const auto* list = read_transform_list(path, reader);
  if (list->size() != 1) {
    fail(path, "holds " + std::to_string(list->size()) + " transforms, not one " + what);
  }
  const auto* t = dynamic_cast<const T*>(list->front().GetPointer());
  if (!t) fail(path, std::string("holds a ") + list->front()->GetNameOfClass() + ", not " + what);
  return t;
}

}  // namespace autoreg::io::detail
