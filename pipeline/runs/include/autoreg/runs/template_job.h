// Group-wise registration: an unbiased template of a cohort (docs/template.md), what
// `autoreg template` runs. Each iteration registers every subject to the current
// template as `autoreg register` does, averages the warped subjects, and moves the
// average by the inverse of the subjects' mean map (Guimond et al. 2000; Avants et al.
// 2010, ANTs' antsMultivariateTemplateConstruction2): the mean affine Ā inverted whole,
// the mean deformation r beyond it by the shape-update step, T(y) ← A(Ā⁻¹(y − step·r(y))),
// so that the template's pose, size and shape move to the subjects' mean.
// After the last iteration every subject is registered to the final template for its
// outputs (fields both ways, warped image and labels; with label maps, the template's
// own fused by joint label fusion).
//
// Intensities: every subject is normalised to [0, 1] (its 0.5th and 99.5th percentiles,
// or the CT window) before averaging, so the template is on that scale.
// Many processes (--nproc, torchrun, srun; docs/distributed.md): rank r registers the
// subjects i ≡ r (mod world) and every rank gets every result exactly (template_round.h),
// so the template is the one process's bit for bit (same threads per process); each rank
// writes its own subjects' outputs, rank 0 the template, checkpoints, labels and report.
// Checkpoints: after each iteration the template (iterations/template_<t>.nii.gz) and
// state.json; --resume continues from the last one and ends as an uninterrupted run
// would, bit for bit (same settings and threads).
#pragma once

#include <nlohmann/json.hpp>

#include "autoreg/runs/template_settings.h"

namespace autoreg::pipeline {

// Builds the template; returns the summary (also written to DIR/summary.json; in the
// process that built it, with "rank": this process's rank, 0 alone). Throws
// io::IoError naming the file for bad input (a manifest of fewer than two subjects,
// an unreadable image, subjects whose fields of view barely overlap the template).
nlohmann::json build_template(const TemplateSettings& settings);

}  // namespace autoreg::pipeline
