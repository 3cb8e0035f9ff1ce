// Adapting a trained model to a new scanner, sequence or site from a few of its scans,
// without labels: the library's side of `autoreg adapt` (docs/adaptation.md). One
// settings struct with its defaults, validated in one place, written back as the command
// line that parses into it, and the job.
//
// The job trains on the model's own objective (its searched λ, similarity and
// smoothness; soft Dice too where the manifest gives label maps) on pairs of the
// manifest's `train` subjects, with train's augmentation. ftm trains the feature-wise
// transformations alone (a scale and a shift per channel after every operation; the
// weights frozen); finetune trains every weight. `val` rows with label maps pick the
// best step. Progress line, JSON-lines log (<out>.log.jsonl), checkpoints (<out>.ckpt)
// and exact resume, the fault guard and the stop after SIGINT/SIGTERM are train's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/runs/run_settings.h"

namespace autoreg::pipeline {

// ftm: the feature-wise transformations alone; finetune: every weight.
enum class AdaptMethod { Ftm, Finetune };
inline constexpr base::NameTable<AdaptMethod, 2> kAdaptMethodNames{
    "--method", {{{AdaptMethod::Ftm, "ftm"}, {AdaptMethod::Finetune, "finetune"}}}};
inline const char* to_string(AdaptMethod m) { return kAdaptMethodNames.name(m); }
// A base::UsageError for any other name.
inline AdaptMethod parse_adapt_method(const std::string& name) { return kAdaptMethodNames.parse<base::UsageError>(name); }

struct AdaptSettings {
  std::string model;                       // the model to adapt (.autoreg), or "default"
  std::string manifest;                    // the new domain's scans (CSV: image,labels,split)
  std::string out;                         // the adapted model file
  AdaptMethod method = AdaptMethod::Ftm;
  int64_t steps = 200;
  std::optional<double> learning_rate;     // none: 1e-3 for ftm, 1e-4 for finetune
  int64_t checkpoint_every = 50, validate_every = 50;
  ModelRunSettings run;
};

// A base::UsageError naming the option when the settings cannot adapt (an output that
// is the model being adapted, among others).
void validate(const AdaptSettings& s);

// The settings' rows (base/schema.h): the command line's options are made from them, and
// to_arguments writes them back.
const base::Schema<AdaptSettings>& adapt_schema();

// `adapt` and the options that parse back into `s`.
std::vector<std::string> to_arguments(const AdaptSettings& s);

// Adapts and writes s.out. Errors: base::UsageError, io::IoError and
// registration::ModelFileError for bad input, base::Interrupted after a stop.
void adapt(const AdaptSettings& s);

}  // namespace autoreg::pipeline
