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

namespace autoreg::pipeline {

// The options of `autoreg register`, with its defaults.
struct ImageRegistrationSettings {
  std::string model;                          // .autoreg file, "default", or "" (instance optimisation)
  std::string device = "cpu";                 // "cpu" or "cuda"
  bool affine = true;                         // false: already aligned (--no-affine)
  bool deformable = true;                     // false: affine only (--affine-only)
  std::string similarity = "ncc";             // "ncc", "mse" or "mind"
  double regularization = 1.0;                // λ of instance optimisation
  std::array<unsigned, 2> iterations{70, 20};          // instance optimisation, 1/4 and 1/2 resolution
  std::array<unsigned, 2> affine_iterations{150, 100};  // affine, 4 mm and 2 mm
  unsigned refine = 0;                        // with a model: instance optimisation steps after it
  uint64_t seed = 0;
};

using FloatImage3 = itk::Image<float, 3>;
// LPS millimetres on the fixed grid: the field of itk::DisplacementFieldTransform<double, 3>.
using PhysicalField3 = itk::Image<itk::Vector<double, 3>, 3>;

// Registers `moving` to `fixed` (whole images, any origin, spacing and direction) and
// returns the displacement field d on the fixed grid: a fixed point x maps to the moving
// point x + d(x) (affine and deformable parts together). `progress` (optional) is called
// with the fraction of the work done, from 0 to 1; an exception it throws stops the
// registration and propagates. Throws std::invalid_argument for inconsistent settings,
// std::runtime_error (with the file's name) for an unreadable model.
PhysicalField3::Pointer register_images(const FloatImage3* fixed, const FloatImage3* moving,
                                        const ImageRegistrationSettings& settings = {},
                                        const std::function<void(double)>& progress = {});

}  // namespace autoreg::pipeline
