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

#include <functional>
#include <string>
#include <vector>

#include "autoreg/base/names.h"
#include "autoreg/parallel/scale_out.h"
#include "autoreg/pipeline/registration_settings.h"

namespace autoreg::pipeline {

// --averaging: how the warped subjects are averaged into the template.
enum class Averaging { Mean, Median, Sharpened };
inline constexpr base::NameTable<Averaging, 3> kAveragingNames{
    "--averaging", {{{Averaging::Mean, "mean"}, {Averaging::Median, "median"}, {Averaging::Sharpened, "sharpened"}}}};
inline const char* averaging_name(Averaging a) { return kAveragingNames.name(a); }
// SettingsError naming --averaging otherwise.
inline Averaging parse_averaging(const std::string& text) { return kAveragingNames.parse<SettingsError>(text); }

// --initial: the template to start from.
struct InitialTemplate {
  enum class Rule {
    AffineMean,  // "affine-mean": the subjects affinely aligned to the first and averaged
    First,       // "first": the first subject
    Image        // an image file
  };
  Rule rule = Rule::AffineMean;
  std::string image;  // with Rule::Image
  // The rules a name gives (any other text names an image file).
  static constexpr base::NameTable<Rule, 2> kNames{"--initial", {{{Rule::AffineMean, "affine-mean"}, {Rule::First, "first"}}}};
  bool operator==(const InitialTemplate& o) const { return rule == o.rule && image == o.image; }
};
std::string initial_text(const InitialTemplate& t);     // "affine-mean", "first" or the image
InitialTemplate parse_initial(const std::string& text);  // anything else is an image file

struct TemplateSettings {
  std::string images;                  // CSV: image[,labels]
  std::string out;                     // output folder (created)
  int iterations = 4;                  // shape updates
  InitialTemplate initial;             // --initial
  double step = 0.25;                  // shape-update step (ANTs' -g 0.25)
  Averaging averaging = Averaging::Mean;  // --averaging (sharpened: the mean, unsharp-masked)
  RegistrationSettings registration;   // how each subject is registered to the template
  bool resume = false;
  int threads = 0;                     // --threads of each rank (0: the library's default)
  parallel::ScaleOut scale;            // nproc > 0: supervise that many ranks of this command line
  std::string executable;              // the autoreg command the ranks run; "": executable.h
  // Called with each progress line (stderr on the command line).
  std::function<void(const std::string&)> log;
  // Called after each iteration's checkpoint (tests interrupt a run here).
  std::function<void(int iteration)> after_checkpoint;
};

// A base::UsageError naming the option for a setting out of range.
void validate(const TemplateSettings& s);

// Builds the template; returns the summary (also written to DIR/summary.json; in the
// process that built it, with "rank": this process's rank, 0 alone). Throws
// io::IoError naming the file for bad input (a manifest of fewer than two subjects,
// an unreadable image, subjects whose fields of view barely overlap the template).
nlohmann::json build_template(const TemplateSettings& settings);

// The command line (`template` first, no --nproc) that gives these settings back: what
// the supervisor's ranks run.
std::vector<std::string> to_arguments(const TemplateSettings& settings);

}  // namespace autoreg::pipeline
