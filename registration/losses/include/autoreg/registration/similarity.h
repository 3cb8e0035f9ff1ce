// Image similarity terms for registration: higher-is-better scores turned into losses
// (lower is better) by one function, so instance optimisation, affine alignment and
// (later) training share them.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <string>

#include "autoreg/base/names.h"

namespace autoreg::registration {

// A local NCC window: odd numbers of voxels along D, H, W (a box; on thick slices fewer
// voxels along the slice axis, for a window of about the same millimetres each way).
using NccWindow = std::array<int64_t, 3>;

// Local normalised cross-correlation (mean over voxels, in [0, 1]; 1 = identical up
// to local affine intensity changes) with a cubic window of `window` voxels (at most the
// widest odd window that fits the volume).
at::Tensor local_ncc(const at::Tensor& a, const at::Tensor& b, int64_t window);
// The same before its mean: each voxel's squared correlation over its window, N×1×D×H×W.
at::Tensor local_ncc_map(const at::Tensor& a, const at::Tensor& b, int64_t window);
// With a box window of window[d] voxels along each axis (each at most what fits its axis).
at::Tensor local_ncc_map(const at::Tensor& a, const at::Tensor& b, NccWindow window);
// The same with each window's moments taken over the voxels inside `weight` (N×1×D×H×W,
// 0 to 1: a mask) alone, so that a window reaching past a mask's edge (a CBCT's field of
// view) compares only what lies inside it.
at::Tensor local_ncc_map(const at::Tensor& a, const at::Tensor& b, NccWindow window, const at::Tensor& weight);

// MIND-SSC descriptors (Heinrich et al., MICCAI 2013): for each voxel, 12 channels
// exp(−D/V) of the patch distances D between the pairs of its six-neighbourhood that
// are √2·dilation apart, patches of (2·radius+1)³ voxels, V the mean distance (clamped).
// Modality independent: a T1 and a T2 of one anatomy have similar descriptors.
// image: N×1×D×H×W → N×12×D×H×W.
at::Tensor mind_ssc(const at::Tensor& image, int64_t radius = 2, int64_t dilation = 2);

// The similarity measures of a registration, as the command line names them ("ncc",
// "mse", "mind"): compared as values, named only at the edges (options, files, logs).
enum class Similarity { Ncc, Mse, Mind };
// Its one name table (base/names.h).
inline constexpr base::NameTable<Similarity, 3> kSimilarityNames{
    "similarity", {{{Similarity::Ncc, "ncc"}, {Similarity::Mse, "mse"}, {Similarity::Mind, "mind"}}}};
// "ncc", "mse" or "mind".
inline const char* similarity_name(Similarity kind) { return kSimilarityNames.name(kind); }
// The measure `name` names; std::invalid_argument naming the known ones otherwise.
inline Similarity parse_similarity(const std::string& name) { return kSimilarityNames.parse(name); }

// A similarity loss between a fixed image and a warped moving one, 1×1×D×H×W each:
//   Ncc:  1 − local_ncc(fixed, warped, window)
//   Mse:  mean squared difference (intensities normalised to [0, 1])
//   Mind: mean squared difference of MIND-SSC descriptors
// `window` is the NCC window (odd; ignored by the others). With a `weight` (1×1×D×H×W,
// 0 to 1: a mask), the mean over voxels is weighted by it and each NCC window's moments
// are taken inside it: cost-function masking, the voxels outside the mask do not count
// (an empty mask: loss 0).
at::Tensor similarity_loss(Similarity kind, const at::Tensor& fixed, const at::Tensor& warped, int64_t window = 7,
                           const at::Tensor& weight = {});
// The same with a box NCC window per axis.
at::Tensor similarity_loss(Similarity kind, const at::Tensor& fixed, const at::Tensor& warped, const NccWindow& window,
                           const at::Tensor& weight = {});

}  // namespace autoreg::registration
