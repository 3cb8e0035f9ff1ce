// The local search's raw loops (search_kernel.cpp): plain floats and bytes, no torch
// headers, compiled for this machine's vector units (segmentation/CMakeLists.txt).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace autoreg::segmentation::detail {

// Searches work on tiles of this many voxels along W (search()'s `need`).
constexpr int64_t kSearchTile = 32;

// The volumes of one atlas's search, as raw D×H×W floats (the atlas padded by s on every
// side), for search_chunk (search_kernel.cpp: no torch headers, built for this machine's
// vector units).
struct SearchVolumes {
  const float* target;
  const float* atlas;  // (D+2s)×(H+2s)×(W+2s)
  float* best;         // the best mean squared difference so far (start: +inf)
  int16_t* chosen;     // its offset's index
  const uint8_t* need = nullptr;  // D×H×W, or null: everywhere
  int64_t d, h, w;
  int s, r;
};

// The search for the rows [y0, y1) of planes [z0, z1) over every offset
// (search_offsets' order): in one sweep per offset, each plane's squared differences are
// summed over the box along W and H (sums of 2r+1 shifted rows, which vectorise), kept in
// a ring of 2r+1 planes, and once a plane's box is complete along D its mean is compared
// with the best so far; only the tiles `need` marks and those their boxes reach; no
// volume-sized temporary, and a chunk of rows small enough for the ring to stay in the
// core's cache. Sums in float (at most (2r+1)³ squares of z-scores, relative rounding
// ~1e-6; box_mean sums in double: tests/segmentation pin the choices to it). A box at a
// border counts only what it holds.
void search_chunk(const SearchVolumes& v, const std::vector<std::array<int, 3>>& offsets, int64_t z0, int64_t z1,
                  int64_t y0, int64_t y1);

// A D×H×W int32 label map's voxels: rows along W contiguous, planes and rows strided.
struct LabelView {
  const int32_t* data;
  int64_t plane_stride, row_stride;
};

// undecided()'s raw loops: 1 in `changes` (uint8 D×H×W, contiguous) for planes [z0, z1)
// where an atlas's label differs from atlas 0's or from its own next voxel along an axis.
void label_changes(const std::vector<LabelView>& labels, int64_t d, int64_t h, int64_t w, int64_t z0, int64_t z1,
                   uint8_t* changes);
// dilated()'s: in place, along W, H and D in turn.
void dilate(uint8_t* mask, int64_t d, int64_t h, int64_t w, int radius);

}  // namespace autoreg::segmentation::detail
