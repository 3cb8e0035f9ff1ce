// The label-free half of the failure checks (pair_checks.h): how well the moving image,
// carried by a map, matches the fixed one, by the registration's own similarity over
// what both scans show. Internal to register_pair.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "autoreg/io/volume.h"
#include "autoreg/pair/pair_checks.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::pipeline::detail {

// The similarity loss (registration/similarity.h: `kind`, lower is better; local NCC of
// 5 voxels) between `fixed` (normalised, on `grid`) and `moving` (normalised, on its own
// grid) carried onto `grid` by `displacement` (the whole map in voxels of `grid`, as
// PairResult::displacement; undefined: the headers' alignment), over the voxels inside
// the fixed mask whose match lies inside the moving volume and mask. Compared on every
// f-th voxel of the fixed grid (f: about 3 mm), which is all a before/after comparison
// needs. NaN when no voxel is inside both.
double mapped_similarity_loss(registration::Similarity kind, const at::Tensor& fixed, const io::Geometry& grid,
                              const io::Volume& moving, const at::Tensor& affine, const at::Tensor& displacement,
                              const PairMasks& masks);

// A second opinion on the same points, from evidence the registration did not optimise:
// the normalised mutual information (Studholme: (H(F) + H(M)) / H(F, M), 1 for independent
// images, 2 for one a relabelling of the other) of the two normalised images' joint
// histogram (pair_checks.h: kMutualInformationBins each; both lie in 0..1). Global where the similarity
// is local, so a map that matches the field of view's edge or the noise locally while the
// anatomy inside moves away lowers it. NaN when no voxel is inside both.
double mapped_mutual_information(const at::Tensor& fixed, const io::Geometry& grid, const io::Volume& moving,
                                 const at::Tensor& affine, const at::Tensor& displacement, const PairMasks& masks);

}  // namespace autoreg::pipeline::detail
