// `autoreg register --pairs pairs.csv --out-dir DIR [--resume] [--shard K/N | --merge]`:
// many pairs in one run, or in shards across machines.
#pragma once

#include <string>

#include "autoreg/pair/register_job.h"

namespace autoreg::pipeline {

// What a run over a pairs file does beside each pair's settings.
struct BatchOptions {
  std::string pairs_csv, out_dir;
  bool resume = false;         // skip the pairs that are complete
  bool inverse = false;        // each pair's inverse field too
  std::string shard;           // "K/N": only that shard's pairs (the library's register_shards.cpp); "" = a job array's index, if any
  bool merge = false;          // join the shards' summaries into the run's instead of registering
  bool allow_missing = false;  // with merge: list pairs in no shard's summary as missing instead of refusing
};

// Registers every pair of `pairs_csv` (columns fixed, moving, optional moving_labels,
// fixed_labels; paths relative to it) with the settings of `base`, the model loaded once
// and the next pair read while the current one registers. Outputs in `out_dir`, named
// <moving>_to_<fixed>_{warped,field,labels}.nii.gz (and _inverse_field with `inverse`),
// each pair's summary in
// <moving>_to_<fixed>.json (written last: a pair with it is complete), and summary.csv /
// summary.json / index.html for the run. A pair that fails is reported and skipped. With
// `resume`, complete pairs are not registered again. A shard registers its pairs only
// and writes summary.shard-K-of-N.{csv,json} instead; `merge` writes the run's summary
// from those. Progress and the closing line go to stderr and stdout.
struct PairsOutcome {
  size_t pairs = 0;         // in the run (a shard's: in the shard)
  int failed = 0;           // failed and skipped
  int missing = 0;          // with merge and allow_missing: in no shard's summary
  int warned = 0;           // registered, but a failure check warned (pair_checks.h)
  std::string summary_csv;  // the summary that lists them
  bool ok() const { return failed + missing == 0; }
};
PairsOutcome run_pairs(RegisterJob base, const BatchOptions& batch);

// The rows of BatchOptions (base/schema.h): `register`'s --pairs options.
const base::Schema<BatchOptions>& batch_schema();

}  // namespace autoreg::pipeline
