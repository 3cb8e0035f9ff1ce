// In-memory ITK images ↔ autoreg volumes and fields, for code that already holds ITK
// images (the ITK filter of pipeline/). The file-based functions of volume.h and
// field.h are the same conversions through a file; these skip the file.
#pragma once

#include <itkImage.h>
#include <itkVector.h>

#include "autoreg/io/volume.h"

namespace autoreg::io {

using FloatImage = itk::Image<float, 3>;
// The field itk::DisplacementFieldTransform<double, 3> holds: LPS millimetres.
using PhysicalFieldImage = itk::Image<itk::Vector<double, 3>, 3>;

// A copy of the image's buffered region as a float32 volume with its geometry. The
// buffered region must be the largest possible region (throws std::invalid_argument
// otherwise) and every voxel finite (IoError otherwise; `name` names the image in it).
Volume volume_from_itk(const FloatImage* image, const std::string& name);

// A voxel displacement field (1×3×D×H×W on `grid`, as register_pair returns it) as
// the ITK field image of a DisplacementFieldTransform on that grid: LPS mm vectors,
// d = Direction · diag(spacing) · (u_i, u_j, u_k), float64.
PhysicalFieldImage::Pointer displacement_to_itk(const at::Tensor& voxels, const Geometry& grid);

}  // namespace autoreg::io
