// Affine transforms: in ITK transform files, and applied to physical points.
//
// An affine is a 4×4 float64 matrix A mapping fixed physical points (LPS mm) to moving
// ones: ITK's convention for a registration result (a transform maps points of the
// output grid to the input image), so itk::ResampleImageFilter or antsApplyTransforms
// with it bring the moving image onto the fixed grid.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace autoreg::io {

// Writes A as an itk::AffineTransform<double, 3>, atomically: ITK text (.tfm, .txt),
// MATLAB (.mat, as ANTs writes) or HDF5 (.h5).
void write_affine(const std::string& path, const at::Tensor& affine);

// Reads any ITK matrix-offset transform (affine, rigid, similarity, ...) as a 4×4 A.
at::Tensor read_affine(const std::string& path);

// A·p for every point of `points` (1×3×D×H×W, LPS mm; any float dtype).
at::Tensor transform_points(const at::Tensor& affine, const at::Tensor& points);

}  // namespace autoreg::io
