// Internal to io/: NIfTI-1 files written straight from tensors. ITK's writer copies a
// volume into an image, writes it uncompressed, and then it is compressed; here the
// header and the voxels go from memory to the file (compressed in parallel blocks for
// .nii.gz), one component at a time, with the header ITK 5.2's NiftiImageIO writes for
// the same image (tests/io/test_nifti_file.cpp compares the two).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

#include "autoreg/io/volume.h"

namespace autoreg::io::detail {

bool ends_with(const std::string& s, const std::string& tail);
// A .nii or .nii.gz path.
bool is_nifti_path(const std::string& path);

// Whether write_nifti writes `path` on grid `g`: a .nii or .nii.gz path, and a direction
// matrix with orthonormal columns (any other is left to ITK, which writes it through a
// polar decomposition).
bool writes_nifti(const std::string& path, const Geometry& g);

// Writes `file` (.nii, or .nii.gz compressed at level 1 on `threads` threads) for the
// image on `g` of `components` components (1: a volume; 3: a vector field, NIfTI's
// intent "vector", components stored one after another as NIfTI orders them). component(c)
// returns component c as a contiguous CPU tensor of D×H×W values of `type` (float32 or
// int32). Errors name `name` (the final path when `file` is a temporary).
void write_nifti(const std::string& file, const std::string& name, const Geometry& g, int components,
                 at::ScalarType type, const std::function<at::Tensor(int)>& component, int threads);

}  // namespace autoreg::io::detail
