#include "autoreg/io/itk_image.h"

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>

#include "autoreg/io/field.h"
#include "itk_bridge.h"

namespace autoreg::io {

Volume volume_from_itk(const FloatImage* image, const std::string& name) {
  if (!image) throw std::invalid_argument(name + ": no image");
  if (image->GetBufferedRegion() != image->GetLargestPossibleRegion()) {
    throw std::invalid_argument(name + ": the whole image must be buffered (update its largest "
                                       "possible region)");
  }
  Volume v = detail::from_itk(image, at::kFloat);
  if (!at::isfinite(v.data).all().item<bool>()) {
    throw IoError(name + ": contains non-finite voxel values (NaN or infinity)");
  }
  return v;
}

PhysicalFieldImage::Pointer displacement_to_itk(const at::Tensor& voxels, const Geometry& grid) {
  return detail::field_image<PhysicalFieldImage>(voxels, grid, at::kDouble);
}

}  // namespace autoreg::io
