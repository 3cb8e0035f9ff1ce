#include "autoreg/io/transform.h"

#include <ATen/ATen.h>
#include <itkAffineTransform.h>
#include <itkTransformFileReader.h>
#include <itkTransformFileWriter.h>

#include "itk_bridge.h"

namespace autoreg::io {
namespace {

using namespace detail;

void check_affine(const at::Tensor& a) {
  TORCH_CHECK(a.sizes() == at::IntArrayRef({4, 4}), "an affine must be 4×4, got ", a.sizes());
}

}  // namespace

namespace detail {

const itk::TransformFileReaderTemplate<double>::TransformListType* read_transform_list(
    const std::string& path, itk::TransformFileReaderTemplate<double>::Pointer& reader) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(path, "no such file");
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".h5" || ext == ".hdf5") check_hdf5_transform(path);
  if (ext == ".mat") check_matlab_transform(path);
  reader = itk::TransformFileReaderTemplate<double>::New();
  reader->SetFileName(path);
  try {
    reader->Update();
  } catch (const itk::ExceptionObject& e) {
    fail(path, "not a readable ITK transform file: " + itk_reason(e, path));
  } catch (const std::exception& e) {  // ITK's text parsers throw std:: errors on some input
    fail(path, std::string("not a readable ITK transform file: ") + e.what());
  }
  return reader->GetTransformList();
}

void write_transform(const std::string& path, const itk::TransformBaseTemplate<double>* transform) {
  write_atomically(path, [&](const std::string& tmp) {
    auto writer = itk::TransformFileWriterTemplate<double>::New();
    writer->SetFileName(tmp);
    writer->SetInput(transform);
    writer->Update();
  });
}

}  // namespace detail

void write_affine(const std::string& path, const at::Tensor& affine) {
  register_formats();
  check_affine(affine);
  const at::Tensor a = affine.to(at::kDouble).cpu().contiguous();
  const auto acc = a.accessor<double, 2>();
  auto transform = itk::AffineTransform<double, 3>::New();
  itk::AffineTransform<double, 3>::MatrixType matrix;
  itk::AffineTransform<double, 3>::OutputVectorType offset;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) matrix(r, c) = acc[r][c];
    offset[r] = acc[r][3];
  }
  transform->SetMatrix(matrix);
  transform->SetOffset(offset);
  write_transform(path, transform);
}

at::Tensor read_affine(const std::string& path) {
  register_formats();
  const auto t = read_transform<itk::MatrixOffsetTransformBase<double, 3, 3>>(path, "an affine transform");
  at::Tensor a = at::eye(4, at::kDouble);
  auto acc = a.accessor<double, 2>();
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) acc[r][c] = t->GetMatrix()(r, c);
    acc[r][3] = t->GetOffset()[r];
  }
  return a;
}

at::Tensor transform_points(const at::Tensor& affine, const at::Tensor& points) {
  check_affine(affine);
  TORCH_CHECK(points.dim() == 5 && points.size(1) == 3, "points must be N×3×D×H×W, got ", points.sizes());
  const at::Tensor a = affine.to(points.scalar_type()).to(points.device());
  return at::einsum("rc,ncdhw->nrdhw", {a.slice(0, 0, 3).slice(1, 0, 3), points}) +
         a.slice(0, 0, 3).select(1, 3).view({1, 3, 1, 1, 1});
}

}  // namespace autoreg::io
