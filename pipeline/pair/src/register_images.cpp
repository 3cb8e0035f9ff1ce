#include "autoreg/pair/register_images.h"

#include <c10/core/GradMode.h>

#include <numeric>
#include <stdexcept>
#include <string>

#include "autoreg/io/grid.h"
#include "autoreg/io/itk_image.h"
#include "autoreg/pair/register_pair.h"

namespace autoreg::pipeline {
namespace {

// Counts the Adam steps of each stage as they are reported and turns them into the
// fraction of all the steps the settings will take (a network's prediction counts as
// one step).
class ProgressCounter {
 public:
  ProgressCounter(const PairOptions& o, std::function<void(double)> report) : report_(std::move(report)) {
    const auto sum = [](const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); };
    affine_ = o.stages == Stages::DeformableOnly ? 0 : sum(o.affine.iterations);
    total_ = affine_ + sum(deformable_levels(o)) + (o.model ? 1 : 0);
  }
  std::function<void(int, int64_t, double)> stage(const std::vector<int64_t>& levels, int64_t offset) {
    if (!report_) return {};
    return [this, levels, offset](int level, int64_t it, double) {
      int64_t done = offset + it + 1;
      for (int l = 0; l < level; ++l) done += levels[l];
      report(done);
    };
  }
  int64_t affine_steps() const { return affine_; }
  void report(int64_t done) const {
    if (report_ && total_ > 0) report_(std::min(1.0, double(done) / double(total_)));
  }
  void finish() const {
    if (report_) report_(1.0);
  }

 private:
  std::function<void(double)> report_;
  int64_t affine_ = 0, total_ = 0;
};

// A mask image as register_pair takes it (1 where non-zero), checked to lie on its image's grid.
at::Tensor mask_from_itk(const FloatImage3* mask, const io::Geometry& image_grid, const std::string& name) {
  if (!mask) return {};
  const io::Volume v = io::volume_from_itk(mask, name);
  if (!io::same_grid(v.geometry, image_grid)) throw std::invalid_argument(name + ": not on the grid of its image");
  return binary_mask(v.data, name);
}

}  // namespace

PhysicalField3::Pointer register_images(const FloatImage3* fixed, const FloatImage3* moving,
                                        const ImageRegistrationSettings& settings,
                                        const std::function<void(double)>& progress,
                                        const FloatImage3* fixed_mask, const FloatImage3* moving_mask) {
  PairOptions options = pair_options(settings);
  const io::Volume f = io::volume_from_itk(fixed, "fixed image");
  const io::Volume m = io::volume_from_itk(moving, "moving image");
  ProgressCounter counter(options, progress);
  options.affine.progress = counter.stage(options.affine.iterations, 0);
  // With a model, refinement runs after the network's one step.
  options.deformable.progress =
      counter.stage(deformable_levels(options), counter.affine_steps() + (options.model ? 1 : 0));
  const PairMasks masks{mask_from_itk(fixed_mask, f.geometry, "fixed image mask"),
                        mask_from_itk(moving_mask, m.geometry, "moving image mask")};
  const PairResult r = register_pair(f, m, options, nullptr, masks);
  c10::AutoGradMode no_grad(false);
  PhysicalField3::Pointer field = io::displacement_to_itk(r.displacement, f.geometry);
  counter.finish();
  return field;
}

}  // namespace autoreg::pipeline
