// The local search of joint label fusion (Wang et al. 2013, §2.3; ANTs' -s): each atlas
// is read, at every voxel, where its patch best matches the target's patch within a small
// neighbourhood, which corrects what registration left misaligned by a voxel or two.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

#include "autoreg/segmentation/fusion.h"

namespace autoreg::segmentation::detail {

// The offsets within ±s voxels along each axis, nearest first.
std::vector<std::array<int, 3>> search_offsets(int s);

// One atlas searched against the target.
struct Searched {
  at::Tensor chosen;  // int16 D×H×W: per voxel, the index (search_offsets) of the best match
  at::Tensor msd;     // float D×H×W: that match's patch mean squared difference
  at::Tensor image;   // float, the atlas's values with its faces repeated s voxels outward
  at::Tensor labels;  // int32, its labels padded alike
};

// For every voxel x of `target` (D×H×W, local z-scores), the offset o within ±s voxels
// whose (2r+1)³ patch of `atlas` (D×H×W z-scores, the same grid) is closest to the
// target's patch around x (least mean squared difference; the smallest |o| wins ties, so
// flat regions keep o = 0); reads outside the volume take the nearest face voxel.
Searched search(const at::Tensor& target, const at::Tensor& atlas, const at::Tensor& labels, int s, int r);

// The volumes of one atlas's search, as raw D×H×W floats (the atlas padded by s on every
// side), for search_slab (search_kernel.cpp: no torch headers, built for this machine's
// vector units).
struct SearchVolumes {
  const float* target;
  const float* atlas;  // (D+2s)×(H+2s)×(W+2s)
  float* best;         // the best mean squared difference so far (start: +inf)
  int16_t* chosen;     // its offset's index
  int64_t d, h, w;
  int s, r;
};

// The search for planes [z0, z1) over every offset (search_offsets' order): in one sweep
// per offset, each plane's squared differences are summed over the box along W and H
// (sums of 2r+1 shifted rows, which vectorise), kept in a ring of 2r+1 planes, and once a
// plane's box is complete along D its mean is compared with the best so far; no
// volume-sized temporary. Sums in float (at most (2r+1)³ squares of z-scores, relative
// rounding ~1e-6; box_mean sums in double: tests/segmentation pin the choices to it).
// A box at a border counts only what it holds.
void search_slab(const SearchVolumes& v, const std::vector<std::array<int, 3>>& offsets, int64_t z0, int64_t z1);

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
// the votes around a voxel disagree.
void vote_searched_patches(Fused& fused, const std::vector<Searched>& atlases, const Options& o);

}  // namespace autoreg::segmentation::detail
