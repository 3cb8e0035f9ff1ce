// Label fusion: the label maps of several atlases, already carried onto the target's grid
// by registration, combined into one segmentation of the target. No files and no ITK:
// tensors in, tensors out (docs/design.md, "Rooms and layers").
//
// Three methods, one vote: at each voxel every atlas votes for its label with a weight,
// and the label with the largest total wins.
//   majority  every atlas weighs 1.
//   weighted  locally weighted vote (Artaechevarria et al. 2009): an atlas weighs
//             (local mean squared difference to the target + ε)^-power, over a
//             (2r+1)³ patch around the voxel.
//   jlf       joint label fusion (Wang et al. 2013, ANTs' antsJointLabelFusion): the
//             weights minimise the expected error of the combined vote, given how the
//             atlases' errors correlate. With d_a the atlas's local intensity difference
//             to the target, M(a,b) = (mean over the patch of |d_a|·|d_b|)^β + α·I and
//             w = M⁻¹1 / 1ᵀM⁻¹1; two atlases that make the same errors share one weight.
// Intensities are compared after a local normalisation (each image's voxel minus its
// patch mean, over its patch standard deviation), so atlases scanned with a different
// contrast or gain than the target are weighed by their structure, not their scale.
//
// Rules: a voxel where every atlas has the same label gets it (no weights computed); a
// tie goes to the smallest label among the tied; label 0 is a label like any other
// (background), so a voxel no atlas labels stays 0.
//
// Work is done only in the box where the atlases disagree (most of a head volume is air,
// where they all say 0). Memory does not grow with labels × atlases × voxels: it is processed in slabs
// of planes along D (with a halo of r planes), and per voxel only the atlases' own labels
// are scored. Weights for the whole volume (atlases × voxels) are kept only on request,
// for per-label probabilities. Slabs run in parallel (at::parallel_for).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autoreg/base/names.h"

namespace autoreg::segmentation {

enum class Method { Majority, Weighted, Jlf };

// Its one name table (base/names.h): "majority", "weighted", "jlf"; parse throws
// std::invalid_argument otherwise.
inline constexpr base::NameTable<Method, 3> kMethodNames{
    "fusion method", {{{Method::Majority, "majority"}, {Method::Weighted, "weighted"}, {Method::Jlf, "jlf"}}}};
inline Method parse_method(const std::string& name) { return kMethodNames.parse(name); }
inline std::string to_string(Method m) { return kMethodNames.name(m); }

struct Options {
  Method method = Method::Jlf;
  int patch_radius = 2;         // r: patches of (2r+1)³ voxels (weighted, jlf)
  double power = 2;             // weighted: the weight is (local MSD + ε)^-power
  double beta = 2;              // jlf: exponent of M's entries
  double alpha = 0.01;          // jlf: added to M's diagonal (keeps M invertible; ANTs' default)
  // weighted, jlf: each atlas is read where its patch best matches the target's within
  // ±search voxels (Wang et al. 2013's local search; ANTs' -s, default 3): its label and
  // patch at x are those at x + o(x). 0: read where registration put it.
  int search_radius = 3;
  // weighted, jlf: every patch votes for all of its voxels, not only its centre (as
  // ANTs' joint fusion does): with the search, voxel y gets w_a(x) for atlas a's label
  // at y + o_a(x) from every x whose patch holds y; without it, a voxel's weights are the
  // mean of those of the patches that hold it.
  bool patch_vote = true;
  bool normalise = true;        // compare local z-scores (false: the intensities as given)
  bool keep_weights = false;    // keep every atlas's weight at every voxel (for probability())
  int64_t slab_planes = 0;      // planes per slab; 0: chosen for ~256 MB of working memory
  bool crop = true;             // compute only in the box where the atlases disagree (+ 2r);
                                // the result is the same, false is for tests
};

// The atlases on the target's grid: images D×H×W (float; intensities need not match the
// target's scale) and label maps D×H×W (integer). The target is D×H×W.
struct Atlases {
  std::vector<at::Tensor> images;
  std::vector<at::Tensor> labels;
};

struct Fused {
  at::Tensor labels;   // D×H×W int32
  at::Tensor weights;  // A×D×H×W float, each voxel's weights summing to 1 (jlf's may be
                       // negative); undefined unless Options::keep_weights
  int64_t unanimous = 0;  // voxels where every atlas agreed (no weights computed there)
  // With a local search and keep_weights: each atlas's labels as read after its search
  // (what the weights vote for; probability() uses them); else empty.
  std::vector<at::Tensor> searched_labels;
  // Where fuse() spent its time, in order: "box" (where the atlases disagree), "search"
  // (local z-scores and the local search), "weights", "vote" (patch voting).
  std::vector<std::pair<std::string, double>> stage_seconds;
};

// Throws std::invalid_argument when shapes differ, a label map is not integer, there is
// no atlas, or an image is not finite.
Fused fuse(const at::Tensor& target, const Atlases& atlases, const Options& options = {});

// The fused probability of `label` at every voxel: Σ_a w_a [labels_a = label], clipped to
// [0, 1]. Needs weights kept by fuse() (Options::keep_weights); at unanimous voxels it is 1
// for their label and 0 for the others.
at::Tensor probability(const Fused& fused, const Atlases& atlases, int64_t label);

// Every label that some atlas holds, sorted (0 included when present).
std::vector<int64_t> label_values(const Atlases& atlases);

}  // namespace autoreg::segmentation
