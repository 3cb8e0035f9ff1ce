// Registration of two in-memory ITK images: what itk::AutoRegImageRegistrationFilter
// runs. The same register_pair as `autoreg register`, so that both give the same field
// for the same images and settings. This header carries no LibTorch types, so that
// code using the filter compiles against ITK alone.
#pragma once

#include <itkImage.h>
#include <itkVector.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "autoreg/pair/registration_settings.h"

namespace autoreg::pipeline {

// The settings of `autoreg register` (registration_settings.h), by their older name.
using ImageRegistrationSettings = RegistrationSettings;

using FloatImage3 = itk::Image<float, 3>;
// LPS millimetres on the fixed grid: the field of itk::DisplacementFieldTransform<double, 3>.
using PhysicalField3 = itk::Image<itk::Vector<double, 3>, 3>;

// Registers `moving` to `fixed` (whole images, any origin, spacing and direction) and
// returns the displacement field d on the fixed grid: a fixed point x maps to the moving
// point x + d(x) (affine and deformable parts together). `progress` (optional) is called
// with the fraction of the work done, from 0 to 1; an exception it throws stops the
// registration and propagates. `fixed_mask` and `moving_mask` (optional; non-zero
// inside, each on its image's grid) restrict the similarity to the voxels they cover
// (register_pair.h's PairMasks). Throws SettingsError (base::UsageError) for inconsistent
// settings, std::invalid_argument for a mask off its image's grid, io::IoError for an
// empty one,
// std::runtime_error (with the file's name) for an unreadable model.
PhysicalField3::Pointer register_images(const FloatImage3* fixed, const FloatImage3* moving,
                                        const ImageRegistrationSettings& settings = {},
                                        const std::function<void(double)>& progress = {},
                                        const FloatImage3* fixed_mask = nullptr, const FloatImage3* moving_mask = nullptr);

}  // namespace autoreg::pipeline
