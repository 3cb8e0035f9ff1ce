// The rows of a run over a pairs file (register_pairs.h: BatchOptions), from which
// `register`'s --pairs options are made.
#include "autoreg/base/schema.h"
#include "autoreg/runs/register_pairs.h"

namespace autoreg::pipeline {

const base::Schema<BatchOptions>& batch_schema() {
  using B = BatchOptions;
  static const base::Schema<B> schema{
      base::text_field<B>("pairs", "pairs", "FILE",
                          "many pairs in one run: a CSV with columns fixed,moving and optionally moving_labels,"
                          "fixed_labels,fixed_points,moving_points,fixed_mask,moving_mask,moving_contours,"
                          "fixed_contours (instead of --fixed/--moving/--out-*)",
                          &B::pairs_csv),
      base::text_field<B>("out_dir", "out-dir", "DIR",
                          "with --pairs: the output folder (outputs named after the inputs, summary.csv, summary.json)",
                          &B::out_dir),
      base::switch_field<B>("resume", "resume", "with --pairs: skip the pairs whose outputs are complete", &B::resume),
      base::text_field<B>("shard", "shard", "K/N",
                          "with --pairs: register only shard K of N (rows i with i % N = K-1), writing "
                          "summary.shard-K-of-N.csv/.json; default: a Slurm array's or Kubernetes indexed Job's index",
                          &B::shard),
      base::switch_field<B>("merge", "merge",
                            "with --pairs: write the run's summary files and index.html in --out-dir from its shards' "
                            "summaries (registers nothing)",
                            &B::merge),
      base::switch_field<B>("allow_missing", "allow-missing",
                            "with --merge: list pairs that no shard registered as missing instead of refusing",
                            &B::allow_missing),
      base::switch_field<B>("inverse", "inverse", "with --pairs: write each pair's inverse field too", &B::inverse)};
  return schema;
}

}  // namespace autoreg::pipeline
