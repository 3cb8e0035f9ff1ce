// The rows of `autoreg segment`'s own settings (segment_job.h): the files and the fusion.
// How each atlas is registered comes from the registration's settings table.
#include <string>

#include "autoreg/base/schema.h"
#include "autoreg/runs/segment_job.h"
#include "autoreg/segmentation/fusion.h"

namespace autoreg::pipeline {
namespace {

using S = SegmentJob;
using F = segmentation::Options;

// The fusion's rows (segmentation::Options), as `segment` spells them.
base::Schema<F> fusion_rows() {
  return {
      base::choice_field<F>("fusion", "fusion", "majority, weighted (locally weighted vote) or jlf (joint label fusion)",
                            segmentation::kMethodNames, &F::method),
      base::whole_field<F>("patch_radius", "patch-radius", "R", "weighted, jlf: patches of (2R+1)³ voxels", &F::patch_radius, 0, 8),
      base::whole_field<F>("search_radius", "search-radius", "S",
                           "weighted, jlf: read each atlas where its patch best matches the target's within ±S voxels "
                           "(local search, as ANTs' -s; 0: none)",
                           &F::search_radius, 0, 4),
      base::off_switch_field<F>("patch_vote", "no-patch-vote",
                                "weighted, jlf: each voxel's weights vote for its own labels only (by default every patch "
                                "votes for all of its voxels, as ANTs' joint fusion)",
                                &F::patch_vote),
      base::number_field<F>("beta", "beta", "B", "jlf: exponent of the error correlations", &F::beta),
      base::number_field<F>("alpha", "alpha", "A", "jlf: added to the correlation matrix's diagonal", &F::alpha),
      base::number_field<F>("power", "power", "P", "weighted: weight = (local mean squared difference)^-P", &F::power)};
}

}  // namespace

const base::Schema<SegmentJob>& segment_schema() {
  static const base::Schema<S> schema = [] {
    base::Schema<S> rows{
        base::text_field<S>("atlases", "atlases", "FILE", "CSV manifest of the atlases: columns image,labels (paths relative to it)",
                            &S::atlases, true),
        base::text_field<S>("target", "target", "FILE", "the image to segment", &S::target, true),
        base::text_field<S>("out", "out", "FILE", "the fused label map (on the target's grid)", &S::out),
        base::text_field<S>("out_contours", "out-contours", "RS.dcm",
                            "with a DICOM series as --target (its folder): the fused labels as a new RT Structure Set on "
                            "it, each label a structure (named by --label-names)",
                            &S::out_contours),
        base::text_field<S>("label_names", "label-names", "FILE.csv",
                            "with --out-contours: a table label,name[,red,green,blue] naming the structures (the labels "
                            "it does not name are left out; without it: label N)",
                            &S::label_names)};
    for (const auto& row : fusion_rows()) {
      rows.push_back(base::nested_row(base::nested_row(row, &SegmentOptions::fusion), &S::options));
    }
    base::Schema<S> rest{
        base::nested_row(base::switch_field<SegmentOptions>(
                             "registered", "registered",
                             "the atlases are on the target's grid already (registered by another run or tool): fuse only",
                             &SegmentOptions::registered),
                         &S::options),
        base::text_field<S>("out_probabilities", "out-probabilities", "DIR",
                            "folder for each label's fused probability (label_<value>.nii.gz)", &S::out_probabilities),
        base::text_field<S>("out_warped_dir", "out-warped-dir", "DIR",
                            "folder for every atlas's image and labels on the target's grid, with an atlases.csv that "
                            "--registered reads",
                            &S::out_warped_dir),
        base::switch_field<S>("out_inverse_fields", "out-inverse-fields",
                              "with --out-warped-dir: every atlas's inverse field there too "
                              "(atlasNN_<name>_inverse_field.nii.gz, on the atlas's grid): the target carried onto the atlas",
                              &S::out_inverse_fields),
        base::text_field<S>("target_labels", "target-labels", "FILE",
                            "the target's own label map: report every atlas's and the fusion's mean Dice", &S::target_labels),
        base::text_field<S>("qc", "qc", "FILE.png",
                            "a picture to check the result (PNG): the fused labels' outlines on the target, beside the mean "
                            "of the warped atlases, in three orthogonal slices",
                            &S::qc)};
    for (auto& row : rest) rows.push_back(std::move(row));
    return rows;
  }();
  return schema;
}

}  // namespace autoreg::pipeline
