// Displacement fields on disk, in the convention ANTs, ITK and ITK-SNAP share.
//
// In memory (ops/): a field is 1×3×D×H×W in voxels of its grid; channel 0 moves along
// tensor dimension D (ITK index k), 1 along H (j), 2 along W (i).
// On disk: an ITK vector image on the same (fixed) grid whose vectors are millimetres
// in ITK's physical LPS frame, so that itk::DisplacementFieldTransform maps a fixed
// point x to x + d(x) and antsApplyTransforms reads it as is. The conversion is
// d = Direction · diag(spacing) · (u_i, u_j, u_k), and its inverse.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "autoreg/io/volume.h"

namespace autoreg::io {

// Voxel displacement (1×3×D×H×W, channels k, j, i) → physical vectors (1×3×D×H×W,
// channels x, y, z in LPS mm), and back. Any float dtype; geometry of the field's grid.
at::Tensor voxel_to_physical(const at::Tensor& voxels, const Geometry& grid);
at::Tensor physical_to_voxel(const at::Tensor& physical, const Geometry& grid);

// The vectors write_displacement_field stores (float32, 1×3×D×H×W, channels x, y, z in
// LPS mm), computed as the NIfTI writer computes them: what the Python package returns
// for the field, the same bits as the file the command line writes.
at::Tensor physical_field(const at::Tensor& voxels, const Geometry& grid);

// Writes a voxel displacement field as an ITK vector image (float32 vectors, LPS mm)
// on `grid`, atomically; any format ITK writes vector images in (.nii.gz, .mha, ...).
// A path ending in .h5 (or .hdf5) gets an ITK transform file holding an
// itk::DisplacementFieldTransform<double, 3> instead (float64 vectors).
void write_displacement_field(const std::string& path, const at::Tensor& voxels,
                              const Geometry& grid);

// Reads an ITK/ANTs displacement field (a vector image, or a DisplacementFieldTransform
// in an .h5 transform file); returns it in voxels of its own grid, whose
// geometry is stored in *grid when given.
at::Tensor read_displacement_field(const std::string& path, Geometry* grid = nullptr);

}  // namespace autoreg::io
