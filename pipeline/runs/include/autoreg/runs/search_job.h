// The triple-level search on a manifest's subjects, the library's side of `autoreg search`
// (docs/search.md): one settings struct with its defaults, validated in one place, written
// back as the command line that parses into it, the job, and its decoupled evaluation.
//
// The job preprocesses the subjects onto the model grid (as train does): `train` rows
// train ω, labelled `val` rows drive α and λ; then the derived network is retrained from
// scratch with the searched λ. `out` (a folder) receives genotype.txt, genotype.json,
// model.autoreg, search.log.jsonl, retrain.log.jsonl, report.html, op_cost.json and the
// checkpoints (search.ckpt, retrain.ckpt) that `resume` continues from. When the
// environment names a rank (torchrun, srun, the nproc supervisor) the ranks search and
// retrain data-parallel, rank 0 alone writing; a watcher process (the same settings with
// `evaluate`) evaluates the checkpoints, decoupled from the search.
#pragma once

#include "autoreg/runs/search_settings.h"

namespace autoreg::pipeline {

// Searches and retrains (as one rank of many when the environment says so; under
// s.scale.nproc as their supervisor). Errors: base::UsageError, io::IoError for bad
// input, base::Interrupted after a stop, parallel::RanksFailed.
void search(const SearchSettings& s);

// The decoupled evaluation of the search in s.out (s.evaluate): waits for its first
// checkpoint, then evaluates each new one until the search has exported its genotype or
// a stop is asked for (run_loop.h).
void evaluate_search(const SearchSettings& s);

}  // namespace autoreg::pipeline
