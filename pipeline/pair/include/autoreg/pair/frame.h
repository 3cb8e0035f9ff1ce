// Where a model's network works: the model frame of a fixed image (the model's grid size,
// spacing and axes, centred on the fixed image's foreground), volumes seen on it,
// and the network's field brought back to the fixed grid. Training (preprocessing to the
// model grid) and `register --model` both go through these, so that a model sees at
// inference what it saw in training.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

#include "autoreg/io/volume.h"
#include "autoreg/registration/model_file.h"

namespace autoreg::pipeline {

// The model grid for a fixed image (intensities normalised): info.grid voxels of
// info.spacing mm along the anatomical axes info.orientation names (the fixed image's
// own axes when it names none), centred on the fixed image's foreground box.
io::Geometry model_frame(const io::Volume& fixed, const registration::ModelInfo& info);

// `volume` sampled at the frame's voxels mapped through `affine` (4×4 float64, frame →
// volume physical points; identity for the fixed image itself): trilinear for float32
// intensities, nearest for int32 labels; outside reads 0. 1×1×D×H×W.
at::Tensor on_frame(const io::Volume& volume, const at::Tensor& affine, const io::Geometry& frame);

// The network's displacement for (moving, fixed) on the frame (1×1×D×H×W each, on
// `device`), brought to the fixed grid: 1×3×D×H×W float32 in voxels of the fixed grid
// (outside the frame, the values at its nearest face). With `inverse`, *inverse gets the
// displacement of the inverse map the same way (RegistrationNetwork::forward_with_inverse).
at::Tensor predict_on_fixed_grid(registration::Model& model, const at::Tensor& moving_on_frame,
                                 const at::Tensor& fixed_on_frame, const io::Geometry& frame,
                                 const io::Geometry& fixed_grid, at::Tensor* inverse = nullptr);

}  // namespace autoreg::pipeline
