// The settings of `autoreg template` (template_job.h builds the template): the averaging,
// the starting template, the settings struct, its validation and the command line that
// parses back into it. Apart from the job so that a round (template_round.h) includes the
// settings, not the job that calls it.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "autoreg/base/names.h"
#include "autoreg/base/schema.h"
#include "autoreg/parallel/scale_out.h"
#include "autoreg/pair/registration_settings.h"

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
  // Stop the shape updates before `iterations` once an iteration moved the template by
  // less than this on average (mm, inside it; its log's update_mm); 0: all iterations.
  double converged_mm = 0;
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

// The rows of the template's own settings (base/schema.h; the registration's are the
// settings table's, registration_settings.h): the command line's options are made from
// them, and to_arguments writes them back.
const base::Schema<TemplateSettings>& template_schema();

// The command line (`template` first, no --nproc) that gives these settings back: what
// the supervisor's ranks run.
std::vector<std::string> to_arguments(const TemplateSettings& settings);

}  // namespace autoreg::pipeline
