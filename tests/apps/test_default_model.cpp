// The shipped model on real data it never saw: vxm01 registered to fsaverage (neither
// in its OASIS-TRT training; both in other voxel orders than its ASL frame) with
// `register --model default` overlaps fsaverage's labels clearly better than after the
// affine stage alone. Mean Dice over the 40 aseg
// labels the two share (../shared/data/README.md); skips without the shared data.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <iterator>
#include <string>

#include "autoreg/io/volume.h"
#include "autoreg/registration/metrics.h"
#include "cli.h"
#include "shared_data.h"

namespace autoreg::test {
namespace {

// Mean Dice over the 40 labels vxm01, fs01 and fsaverage share (all present in fsaverage).
double mean_dice(const at::Tensor& a, const at::Tensor& b) {
  static const int64_t kShared[] = {2,  4,  5,  7,  8,  10, 11, 12, 13, 14, 15, 16, 17, 18,  24,  26,  28,  31,  41,  43,
                                    44, 46, 47, 49, 50, 51, 52, 53, 54, 58, 60, 62, 63, 77, 85, 251, 252, 253, 254, 255};
  double sum = 0;
  for (int64_t label : kShared) sum += registration::dice(a, b, label);
  return sum / std::size(kShared);
}

class DefaultModel : public Cli {};

TEST_F(DefaultModel, BeatsTheAffineAloneOnAHeldOutSubject) {
  const fs::path brains = shared_data() / "brains";
  const std::string fixed = (brains / "fsaverage_t1.nii.gz").string(), moving = (brains / "vxm01_t1.nii.gz").string();
  const std::string fixed_labels = (brains / "fsaverage_aseg.nii.gz").string();
  const std::string moving_labels = (brains / "vxm01_aseg.nii.gz").string();
  if (!fs::exists(fixed) || !fs::exists(moving)) GTEST_SKIP() << "no test data at " << brains;
  // vxm01's header says RAS; its voxel axes point Left, Inferior, Anterior.
  Result r = run("register --fixed " + fixed + " --moving " + moving + " --moving-orientation LIA --model default" +
                 " --moving-labels " + moving_labels + " --out-labels " + path("model.nii.gz") +
                 " --out-warped " + path("w.nii.gz") + " --out-field " + path("f.nii.gz") + " --out-affine " +
                 path("a.tfm") + " --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("apply --field " + path("a.tfm") + " --moving " + moving_labels + " --moving-orientation LIA --reference " +
          fixed + " --interpolation nearest --out " + path("affine.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  const at::Tensor atlas = io::read_volume(fixed_labels).data.to(at::kInt);
  const double affine = mean_dice(atlas, io::read_volume(path("affine.nii.gz")).data.to(at::kInt));
  const double model = mean_dice(atlas, io::read_volume(path("model.nii.gz")).data.to(at::kInt));
  RecordProperty("affine_dice", std::to_string(affine));
  RecordProperty("model_dice", std::to_string(model));
  // Measured: affine 0.564, default model 0.638 (docs/training.md, "The default model"); since the
  // affine stage samples its points stratified (issue 13), affine 0.588, model 0.635:
  // the model's result held while the affine it starts from improved, so the margin
  // asked of it is 0.03 and its own Dice must stay above 0.62.
  EXPECT_GT(affine, 0.45) << "the affine stage failed";
  EXPECT_GT(model, affine + 0.03) << "affine " << affine << ", default model " << model;
  EXPECT_GT(model, 0.62) << "affine " << affine << ", default model " << model;
}

}  // namespace
}  // namespace autoreg::test
