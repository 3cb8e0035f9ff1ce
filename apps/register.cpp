// autoreg register --fixed F --moving M [--out-warped W] [--out-field D] (at least one output, or --json)
//                  [--moving-labels L --out-labels WL] [--out-affine A.tfm]
//                  [--out-inverse-field DI] [--fixed-labels FL] [--qc qc.png]
//                  [--affine-only | --no-affine] [--similarity ncc|mse|mind]
//                  [--regularizer diffusion|tv] [--regularization λ] [--iterations N1,N2,...] [--affine-iterations N1,N2]
//                  [--fixed-mask FM] [--moving-mask MM] [--rigid]
//                  [--moving-contours RS.dcm [--out-contours RS2.dcm] [--fixed-contours RSF.dcm]]
//                  [--fixed-orientation C] [--moving-orientation C]
//                  [--model FILE|default [--refine K]]
//                  [--device cpu|cuda] [--threads T] [--seed S] [--force] [--json]
//
// Affine pre-alignment in physical space, then a deformable field: a trained model's
// prediction (optionally refined by K steps of instance optimisation), or without a
// model instance optimisation of a diffeomorphic field on the pair
// (autoreg/pair/register_pair.h). The moving image and labels are sampled once,
// through the composed map.
#include <tclap/CmdLine.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "autoreg/pair/register_job.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/runs/register_pairs.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"
#include "print_contours.h"
#include "registration_args.h"
#include "schema_args.h"

namespace autoreg::apps {
namespace {

// What `register` is given besides how a pair is registered (the settings table's
// options): the files of one pair, or a list of pairs and its run, and what it prints.
struct RegisterCommand {
  pipeline::RegisterJob job;
  pipeline::BatchOptions batch;
  bool affine_only = false;  // the registration's `deformable` off: the command's own switch
  bool json = false, strict = false;
};

// The command's rows: the pair's files (register_job_schema), the run over a pairs
// file (batch_schema) and the command's own switches.
base::Schema<RegisterCommand> register_schema() {
  using C = RegisterCommand;
  base::Schema<C> rows = base::nested(pipeline::register_job_schema(), &C::job);
  for (auto& row : base::nested(pipeline::batch_schema(), &C::batch)) rows.push_back(std::move(row));
  base::Schema<C> own{
      base::switch_field<C>("affine_only", "affine-only", pipeline::setting_row("deformable").help, &C::affine_only),
      base::switch_field<C>("json", "json", "print a JSON summary", &C::json),
      base::switch_field<C>("strict", "strict",
                            "exit with code 6 when a failure check warns (the result worse than the start on what both "
                            "scans show, an affine beyond the preset's limits, folding over 1 %); the outputs are written "
                            "either way; with --pairs, when it warns on any pair that did not fail (failures give 5 first)",
                            &C::strict)};
  for (auto& row : own) rows.push_back(std::move(row));
  return rows;
}

// "wrote W, F and L": the outputs asked for, in the order of the options.
std::string written_line(const pipeline::RegisterJob& p) {
  std::vector<std::string> names;
  for (const std::string* out : {&p.out_warped, &p.out_field, &p.out_labels, &p.out_contours, &p.out_affine,
                                 &p.out_inverse_field, &p.qc}) {
    if (!out->empty()) names.push_back(*out);
  }
  if (names.empty()) return "registered (no output file asked for)";
  std::string line = "wrote " + names.front();
  for (size_t i = 1; i < names.size(); ++i) line += (i + 1 == names.size() ? " and " : ", ") + names[i];
  return line;
}

// What only the command line can say wrongly: the options that go together or exclude
// each other, for one pair or for --pairs.
void check_given(const SchemaArgs<RegisterCommand>& given, const pipeline::RegisterJob& p) {
  if (given.given("pairs")) {
    const std::string one = given.first_given({"fixed", "moving", "out-warped", "out-field", "moving-labels", "out-labels",
                                               "out-affine", "fixed-labels", "out-inverse-field", "qc", "fixed-points",
                                               "moving-points", "fixed-mask", "moving-mask", "moving-contours",
                                               "fixed-contours", "out-contours"});
    if (!one.empty()) throw UsageError("--pairs lists the pairs; --" + one + " is for one pair");
    if (!given.given("out-dir")) throw UsageError("--pairs needs --out-dir");
    if (given.given("merge") && (given.given("shard") || given.given("resume"))) {
      throw UsageError("--merge joins the shards' summaries; --shard and --resume are for registering");
    }
    if (given.given("allow-missing") && !given.given("merge")) throw UsageError("--allow-missing goes with --merge");
    return;
  }
  const std::string batch_only = given.first_given({"out-dir", "resume", "inverse", "shard", "merge", "allow-missing"});
  if (!batch_only.empty()) throw UsageError("--" + batch_only + " goes with --pairs");
  for (const char* o : {"fixed", "moving"}) {
    if (!given.given(o)) throw UsageError(std::string("--") + o + " is required (or --pairs for many pairs)");
  }
  // Any one output will do: only the warped image, only the labels, only the summary.
  if (given.first_given({"out-warped", "out-field", "out-labels", "out-contours", "out-affine", "out-inverse-field", "qc",
                         "json"})
          .empty()) {
    throw UsageError("nothing to write: give --out-warped FILE (the moving image on the fixed grid), --out-field FILE "
                     "(the displacement field), --out-labels, --out-contours, --out-affine, --out-inverse-field, "
                     "--qc or --json (the summary only)");
  }
  if (!p.moving_labels.empty() && p.out_labels.empty()) throw UsageError("--moving-labels and --out-labels go together");
  if (!p.out_labels.empty() && p.moving_labels.empty() && p.moving_contours.empty()) {
    throw UsageError("--out-labels writes the warped --moving-labels, or the structures of --moving-contours");
  }
  if (p.fixed_points.empty() != p.moving_points.empty()) throw UsageError("--fixed-points and --moving-points go together");
  if (p.moving_contours.empty() && (!p.out_contours.empty() || !p.fixed_contours.empty())) {
    throw UsageError(std::string(p.out_contours.empty() ? "--fixed-contours compares" : "--out-contours writes") +
                     " the structures carried from --moving-contours: give the moving series' RT Structure Set");
  }
  refuse_overwrite({&p.out_warped, &p.out_field, &p.out_labels, &p.out_affine, &p.out_inverse_field, &p.qc, &p.out_contours},
                   {&p.fixed, &p.moving, &p.moving_labels, &p.fixed_labels, &p.fixed_mask, &p.moving_mask,
                    &p.moving_contours, &p.fixed_contours});
}

// The summary of one pair on stdout (the JSON with --json), its warnings on stderr.
void print_summary(const nlohmann::json& summary, const pipeline::RegisterJob& p, bool json) {
  // A failed check is never silent: on stderr always (before the summary), in the exit
  // code with --strict.
  for (const auto& w : summary["warnings"]) {
    std::fprintf(stderr, "warning: %s: %s\n", w["check"].get<std::string>().c_str(), w["message"].get<std::string>().c_str());
  }
  if (json) {
    std::printf("%s\n", summary.dump(2).c_str());
    return;
  }
  // What --preset auto chose (or the preset given), and why (--json: preset_choice).
  const auto& choice = summary["preset_choice"];
  std::printf("preset %s: %s\n", choice["name"].get<std::string>().c_str(), choice["reason"].get<std::string>().c_str());
  std::printf("%s in %.1f s; %.3f %% of voxels fold\n", written_line(p).c_str(), summary["seconds"].get<double>(),
              summary["non_positive_jacobian_percent"].get<double>());
  if (!summary["tre"].is_null()) {
    const auto& t = summary["tre"];
    std::printf("TRE over %zu landmarks: %.2f mm before, %.2f mm after (median %.2f, 95th %.2f, max %.2f)\n",
                t["points"].get<size_t>(), t["before_mean_mm"].get<double>(), t["mean_mm"].get<double>(),
                t["median_mm"].get<double>(), t["p95_mm"].get<double>(), t["max_mm"].get<double>());
  }
  if (summary.contains("contours")) print_contours(summary["contours"]);
}

// A list of pairs: the run's exit code from what became of them.
int register_many(const pipeline::RegisterJob& p, const RegisterCommand& c) {
  const pipeline::PairsOutcome r = pipeline::run_pairs(p, c.batch);
  if (r.ok()) {
    if (c.strict && r.warned > 0) {
      std::fprintf(stderr, "autoreg register: a failure check warned on %d of %zu pairs (the warnings column of %s)\n",
                   r.warned, r.pairs, r.summary_csv.c_str());
      return kCheckFailed;
    }
    return kOk;
  }
  const std::string and_missing = r.missing ? ", " + std::to_string(r.missing) + " missing" : "";
  std::fprintf(stderr, "autoreg register: %d of %zu pairs failed%s (listed in %s)\n", r.failed, r.pairs,
               and_missing.c_str(), r.summary_csv.c_str());
  return kSomePairsFailed;
}

}  // namespace

int run_register(int argc, char** argv) {
  TCLAP::CmdLine cmd("Register a moving volume to a fixed one: affine pre-alignment in physical "
                     "space, then a deformable field predicted by a trained network (--model), or "
                     "without a model a diffeomorphic field optimised on the pair (stationary "
                     "velocity, scaling and squaring, coarse to fine).",
                     ' ', "0.1");
  const SchemaArgs<RegisterCommand> options(cmd, register_schema(), RegisterCommand{});  // the files and the run
  RegistrationArgs registration(cmd);  // how the pair is registered (the settings table's)
  DeviceArg device(cmd);
  ThreadsArg threads(cmd);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  RegisterCommand c = options.settings(RegisterCommand{});
  pipeline::RegisterJob& p = c.job;
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  check_given(options, p);
  const bool batch = options.given("pairs");
  pipeline::RegistrationSettings s = registration.settings(device.value());
  s.deformable = !c.affine_only;
  if (batch && c.batch.merge) {
    s.model.clear();  // a merge registers nothing: no model to read
    s.refine = 0;
  }
  // The model's reading counts in the "read" stage.
  pipeline::StageTimes times;
  p.options = pair_options_of(s);
  threads.apply();
  if (batch) return register_many(p, c);
  const nlohmann::json summary = pipeline::register_files(p, times);
  print_summary(summary, p, c.json);
  if (c.strict && !summary["warnings"].empty()) return kCheckFailed;
  return kOk;
}

}  // namespace autoreg::apps
