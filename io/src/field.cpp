#include "autoreg/io/field.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <itkImageFileReader.h>
#include <itkDisplacementFieldTransform.h>
#include <itkVector.h>

#include <cstring>

#include "autoreg/io/grid.h"
#include "autoreg/io/itk_image.h"
#include "itk_bridge.h"
#include "nifti_file.h"

namespace autoreg::io {
namespace {

using namespace detail;
using FieldImage = itk::Image<itk::Vector<float, 3>, 3>;

void check_field(const char* what, const at::Tensor& t, const Geometry& g) {
  const auto& s = g.size;
  TORCH_CHECK(t.dim() == 5 && t.size(0) == 1 && t.size(1) == 3 && t.size(2) == s[2] &&
                  t.size(3) == s[1] && t.size(4) == s[0],
              what, " must be 1×3×D×H×W on the grid of size (i, j, k) = (", s[0], ", ", s[1],
              ", ", s[2], "), got ", t.sizes());
}

// M = Direction · diag(spacing): physical = M · (i, j, k).
at::Tensor index_to_physical(const Geometry& g) {
  return index_to_world(g).slice(0, 0, 3).slice(1, 0, 3);
}

// An ITK transform file (rather than a vector image) by its extension.
bool is_transform_file(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".h5" || ext == ".hdf5";
}

using TransformField = itk::DisplacementFieldTransform<double, 3>::DisplacementFieldType;

// Applies the 3×3 matrix m to the vectors of a 1×3×D×H×W field.
at::Tensor apply(const at::Tensor& m, const at::Tensor& field) {
  return at::einsum("rc,ncdhw->nrdhw", {m.to(field.scalar_type()).to(field.device()), field});
}

// An ITK field image read from `path` (vectors of `type`: float32 for vector images,
// float64 in transform files) as a float32 voxel field on its own grid.
template <typename FieldT>
at::Tensor voxels_of(const std::string& path, const FieldT* image, at::ScalarType type, Geometry* grid) {
  const Geometry g = geometry_of(image);
  const auto& s = g.size;
  at::Tensor xyz = at::empty({s[2], s[1], s[0], 3}, type);
  std::memcpy(xyz.data_ptr(), image->GetBufferPointer(), xyz.nbytes());
  if (!at::isfinite(xyz).all().item<bool>()) fail(path, "displacement field has non-finite vectors");
  if (grid) *grid = g;
  return physical_to_voxel(xyz.permute({3, 0, 1, 2}).unsqueeze(0).to(at::kDouble), g)
      .to(at::kFloat)
      .contiguous();
}

// The displacement field of a DisplacementFieldTransform stored in an ITK transform file.
at::Tensor read_field_transform(const std::string& path, Geometry* grid) {
  const auto t = read_transform<itk::DisplacementFieldTransform<double, 3>>(path, "a DisplacementFieldTransform");
  const TransformField* image = t->GetDisplacementField();
  if (!image) fail(path, "the DisplacementFieldTransform has no field");
  return voxels_of(path, image, at::kDouble, grid);
}

// Component c (x, y or z, LPS mm) of the physical vectors of a voxel field (1×3×D×H×W,
// float32, channels k, j, i), D×H×W: one volume at a time instead of the whole field.
at::Tensor physical_component(const at::Tensor& voxels, const at::Tensor& m, int c) {
  at::Tensor out;
  for (int a = 0; a < 3; ++a) {  // index axis a = i, j, k is channel 2 − a
    const double w = m[c][a].item<double>();
    if (w == 0) continue;
    const at::Tensor term = voxels[0][2 - a];
    out = out.defined() ? out.add_(term, w) : term * w;
  }
  return out.defined() ? out.contiguous() : at::zeros_like(voxels[0][0]);
}

}  // namespace

at::Tensor voxel_to_physical(const at::Tensor& voxels, const Geometry& grid) {
  check_field("voxel displacement", voxels, grid);
  // Channels (k, j, i) → index vector (i, j, k) → physical (x, y, z).
  return apply(index_to_physical(grid), voxels.flip({1}));
}

at::Tensor physical_to_voxel(const at::Tensor& physical, const Geometry& grid) {
  check_field("physical displacement", physical, grid);
  return apply(at::inverse(index_to_physical(grid)), physical).flip({1});
}

at::Tensor physical_field(const at::Tensor& voxels, const Geometry& grid) {
  check_field("displacement", voxels, grid);
  const at::Tensor v = voxels.to(at::kFloat).cpu().contiguous();
  const at::Tensor m = index_to_physical(grid);
  return at::stack({physical_component(v, m, 0), physical_component(v, m, 1), physical_component(v, m, 2)}, 0)
      .unsqueeze(0);
}

void write_displacement_field(const std::string& path, const at::Tensor& voxels,
                              const Geometry& grid) {
  register_formats();
  check_field("displacement", voxels, grid);
  if (is_transform_file(path)) {
    auto transform = itk::DisplacementFieldTransform<double, 3>::New();
    transform->SetDisplacementField(displacement_to_itk(voxels, grid));
    write_transform(path, transform);
    return;
  }
  if (writes_nifti(path, grid)) {
    const at::Tensor v = voxels.to(at::kFloat).cpu().contiguous();
    const at::Tensor m = index_to_physical(grid);
    write_atomically(path, [&](const std::string& tmp) {
      write_nifti(tmp, path, grid, 3, at::kFloat, [&](int c) { return physical_component(v, m, c); },
                  at::get_num_threads());
    });
    return;
  }
  write_image(path, detail::field_image<FieldImage>(voxels, grid, at::kFloat).GetPointer());
}

at::Tensor read_displacement_field(const std::string& path, Geometry* grid) {
  register_formats();
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "no such file");
  if (is_transform_file(path)) return read_field_transform(path, grid);
  auto reader = itk::ImageFileReader<FieldImage>::New();
  // Our checks of the header; ITK's reader reads the header again from this ImageIO.
  const itk::ImageIOBase::Pointer header = check_header(path, 3);
  reader->SetImageIO(header);
  reader->SetFileName(path);
  read_whole(path, *header, [&] {
    try {
      reader->Update();
    } catch (const itk::ExceptionObject& e) {
      fail(path, "cannot read displacement field: " + itk_reason(e, path));
    }
  });
  return voxels_of(path, reader->GetOutput(), at::kFloat, grid);
}

}  // namespace autoreg::io
