// The template's own settings (template_settings.h): the starting template's names,
// their checks and their rows (base/schema.h), from which `template`'s options and the
// ranks' command line are made.
#include <string>
#include <vector>

#include "autoreg/base/errors.h"
#include "autoreg/base/schema.h"
#include "autoreg/runs/run_settings.h"
#include "autoreg/runs/template_settings.h"

namespace autoreg::pipeline {

std::string initial_text(const InitialTemplate& t) {
  return t.rule == InitialTemplate::Rule::Image ? t.image : InitialTemplate::kNames.name(t.rule);
}

InitialTemplate parse_initial(const std::string& text) {
  if (!InitialTemplate::kNames.contains(text)) return {InitialTemplate::Rule::Image, text};
  return {InitialTemplate::kNames.parse(text), ""};
}

void validate(const TemplateSettings& s) {
  if (s.images.empty()) throw SettingsError("--images is required: a CSV with a column image (and optionally labels)");
  if (s.out.empty()) throw SettingsError("--out is required: the output folder");
  if (s.iterations < 0 || s.iterations > 100) throw SettingsError("--template-iterations must be between 0 and 100");
  if (!(s.step > 0 && s.step <= 1)) throw SettingsError("--step must be in (0, 1]");
  if (!(s.converged_mm >= 0)) throw SettingsError("--converged-mm must be >= 0 (0: every iteration)");
  if (!s.registration.deformable) throw SettingsError("a template needs the deformable stage");
  if (s.threads < 0) throw SettingsError("--threads must be >= 0");
  validate(s.registration);
  parallel::validate(s.scale);
}

const base::Schema<TemplateSettings>& template_schema() {
  using S = TemplateSettings;
  static const base::Schema<S> schema = [] {
    base::Schema<S> rows{
        base::text_field<S>("images", "images", "FILE",
                            "CSV with a column image (and optionally labels: the template gets a label map fused from "
                            "them), paths relative to it",
                            &S::images),
        base::text_field<S>("out", "out", "DIR",
                            "output folder: template.nii.gz, <subject>_field/_inverse/_warped.nii.gz, index.html, the "
                            "iterations",
                            &S::out),
        base::whole_field<S>("template_iterations", "template-iterations", "N",
                             "shape updates of the template (--iterations sets each registration's levels, as in register)",
                             &S::iterations),
        {"initial", "initial", "HOW",
         "the template to start from: affine-mean (the subjects affinely aligned to the first and averaged), first (the "
         "first subject), or an image file",
         [](const S& s) { return initial_text(s.initial); }, [](S& s, const std::string& t) { s.initial = parse_initial(t); }},
        base::number_field<S>("step", "step", "S",
                              "shape-update step: the share of the mean displacement the template moves by each iteration "
                              "(0.25 as ANTs' -g)",
                              &S::step),
        base::choice_field<S>("averaging", "averaging",
                              "how the warped subjects are averaged: mean, median, or sharpened (the mean, unsharp-masked)",
                              kAveragingNames, &S::averaging),
        base::number_field<S>("converged_mm", "converged-mm", "MM",
                              "stop the shape updates before --template-iterations once an iteration moved the template "
                              "by less than this on average, in mm inside it (its log's update_mm; 0: every iteration)",
                              &S::converged_mm),
        base::switch_field<S>("resume", "resume", "continue from the last iteration's checkpoint in --out", &S::resume),
        threads_field<S>("CPU threads of each process (default: all; with --nproc, the cores shared among the ranks)",
                         &S::threads)};
    for (auto& row : base::nested(scale_out_schema(), &S::scale)) rows.push_back(std::move(row));
    return rows;
  }();
  return schema;
}

std::vector<std::string> to_arguments(const TemplateSettings& s) {
  std::vector<std::string> words = base::arguments("template", template_schema(), s);
  const std::vector<std::string> registration = to_arguments(s.registration);
  words.insert(words.end(), registration.begin(), registration.end());
  return words;
}

}  // namespace autoreg::pipeline
