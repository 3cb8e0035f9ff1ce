// The local search of joint label fusion (Wang et al. 2013, §2.3; ANTs' -s): each atlas
// is read, at every voxel, where its patch best matches the target's patch within a small
// neighbourhood, which corrects what registration left misaligned by a voxel or two.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

#include "autoreg/segmentation/fusion.h"
#include "search_kernel.h"

namespace autoreg::segmentation::detail {

// The offsets within ±s voxels along each axis, nearest first.
std::vector<std::array<int, 3>> search_offsets(int s);

// One atlas searched against the target.
struct Searched {
  at::Tensor chosen;  // int16 D×H×W: per voxel, the index (search_offsets) of the best match
  at::Tensor msd;     // float D×H×W: that match's patch mean squared difference (the
                      // weighted vote's weights; fusion releases it for jlf)
  at::Tensor image;   // float, the atlas's values with its faces repeated s voxels outward
  at::Tensor labels;  // int32, its labels padded alike
};

// For every voxel x of `target` (D×H×W, local z-scores), the offset o within ±s voxels
// whose (2r+1)³ patch of `atlas` (D×H×W z-scores, the same grid) is closest to the
// target's patch around x (least mean squared difference; the smallest |o| wins ties, so
// flat regions keep o = 0); reads outside the volume take the nearest face voxel.
// `need` (uint8 D×H×W, optional): search only the tiles of rows (kSearchTile voxels)
// that hold a voxel it marks; elsewhere chosen stays 0 and msd +inf.
Searched search(const at::Tensor& target, const at::Tensor& atlas, const at::Tensor& labels, int s, int r,
                const at::Tensor& need = {});

// Where a search can change an answer. A voxel y is decided when every label a search
// could read for it (every atlas's, within ±s of y) is one and the same: every vote for y
// is that label, whatever offsets were chosen, and so are the votes of y's own patch.
// Returns uint8 D×H×W, 1 where y may be undecided: within ±s of a voxel where the atlases
// disagree or an atlas's label changes to its next voxel along an axis (which holds every
// undecided voxel). `labels`: the atlases' label maps on one grid.
at::Tensor undecided(const std::vector<at::Tensor>& labels, int s);

// `mask` (uint8) grown by `radius` voxels along each axis (a cube).
at::Tensor dilated(const at::Tensor& mask, int radius);

// Weighted vote or JLF with searched atlases, as ANTs' joint fusion: at every voxel x
// each atlas votes with its label at x + o(x), and its patch errors are those of its
// patch at x + o(x) against the target's at x. Returns the labels, the unanimous count,
// the weights (o.keep_weights) and every atlas's labels as read (searched_labels).
Fused fuse_searched(const at::Tensor& target, const std::vector<Searched>& atlases, const Options& o);

// Patch voting with searched atlases, as ANTs' joint fusion votes: every voxel x gives
// each atlas's weight at x to that atlas's labels over x's whole patch, read at x's
// offset, so a voxel y collects, for every x whose patch holds it, the votes
// w_a(x)·[L_a(y + o_a(x))]; the label with the largest sum wins (ties: the smallest).
// `fused` holds fuse_searched's result with its weights; its labels are replaced where
// the votes around a voxel disagree (and, given `undecided` (undecided()), only where it
// marks: elsewhere every vote is for the label fuse_searched gave).
void vote_searched_patches(Fused& fused, const std::vector<Searched>& atlases, const Options& o,
                           const at::Tensor& undecided = {});

}  // namespace autoreg::segmentation::detail
