// How a long run validates its network (train, search, adapt), and what the long runs
// that end in a model file (train, adapt) share: where the preprocessed volumes and the
// log go, the device, threads, seed and resumption, and the rows the command line's
// options are made from (model_run_schema, scale_out_schema: base/schema.h).
#pragma once

#include <cstdint>
#include <string>

#include "autoreg/base/errors.h"
#include "autoreg/base/names.h"
#include "autoreg/base/schema.h"
#include "autoreg/parallel/scale_out.h"

namespace autoreg::pipeline {

// How a run validates its network: inline (every validate_every steps on rank 0; the
// step waits), decoupled (a watcher process evaluates the checkpoints and its results
// go into the log and the progress line as they arrive) or off. Named so on the command
// line (--validation).
enum class Validation { Decoupled, Inline, Off };
inline constexpr base::NameTable<Validation, 3> kValidationNames{
    "--validation", {{{Validation::Decoupled, "decoupled"}, {Validation::Inline, "inline"}, {Validation::Off, "off"}}}};
inline const char* to_string(Validation v) { return kValidationNames.name(v); }
// A base::UsageError for a name that is none of the three.
inline Validation parse_validation(const std::string& name) { return kValidationNames.parse<base::UsageError>(name); }

struct ModelRunSettings {
  std::string cache;           // preprocessed volumes; "": <out>.cache
  std::string log;             // JSON lines, one per step; "": <out>.log.jsonl
  std::string device = "cpu";  // cpu | cuda
  int threads = 0;             // CPU threads; 0: LibTorch's default (all)
  uint64_t seed = 0;
  bool resume = false;         // continue from <out>.ckpt

  std::string cache_for(const std::string& out) const { return cache.empty() ? out + ".cache" : cache; }
  std::string log_for(const std::string& out) const { return log.empty() ? out + ".log.jsonl" : log; }
};
// Their rows (base/schema.h): --cache, --log (`log_help`: what the log holds), --device,
// --threads, --seed, --resume.
base::Schema<ModelRunSettings> model_run_schema(const std::string& log_help);
// The --threads row of a settings struct (`member`: 0 for LibTorch's default, not written).
template <typename S>
base::SettingField<S> threads_field(std::string help, int S::*member) {
  return {"threads", "threads", "T", std::move(help),
          [member](const S& s) { return s.*member > 0 ? std::to_string(s.*member) : std::string(); },
          [member](S& s, const std::string& t) { s.*member = int(base::whole_number("threads", t, 0, 1 << 16)); }};
}
// The rows of running on many processes: --nproc and --max-restarts (the supervisor's,
// not written back for its ranks) and --collective-timeout.
base::Schema<parallel::ScaleOut> scale_out_schema();

}  // namespace autoreg::pipeline
