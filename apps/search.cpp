// autoreg search --manifest M --out DIR [--budget-minutes T | --steps N] [--retrain-steps N]
//                [--grid DxHxW] [--spacing MM] [--mode joint|sequential] [--order first|second]
//                [--edges all|deformation] [--path sampled|mixed] [--max-forward-ms X] ...
//                [--device cpu|cuda] [--threads N] [--seed S] [--resume]
//                [--batch G] [--nproc N [--max-restarts R]] [--validation decoupled|inline|off] [--evaluate]
//
// The triple-level search (search/searcher.h) on a manifest's subjects (preprocessed
// onto the model grid as `train` does): `train` rows train ω, labelled `val` rows drive
// α and λ. Then the derived network is retrained from scratch with the searched λ. DIR
// receives genotype.txt, genotype.json, model.autoreg, search.log.jsonl, retrain.log.jsonl,
// report.html, op_cost.json and the checkpoints (search.ckpt, retrain.ckpt) that
// --resume continues from. SIGINT/SIGTERM write a checkpoint and exit with 4. Under
// torchrun or srun (or --nproc) the ranks search (and retrain) data-parallel, rank 0
// alone writing; a watcher process (this command with --evaluate) evaluates the
// checkpoints, decoupled from the search. The job is pipeline::search (search_job.h);
// this file parses its settings.
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>

#include "autoreg/runs/run_loop.h"
#include "autoreg/runs/search_job.h"
#include "exit_codes.h"
#include "parse.h"
#include "schema_args.h"

namespace autoreg::apps {

int run_search(int argc, char** argv) {
  const pipeline::SearchSettings defaults;
  TCLAP::CmdLine cmd("Search the network architecture and the training objective for a dataset (CSV manifest: "
                     "image,labels,split; train rows train the weights, labelled val rows choose the architecture "
                     "and the objective), then retrain the derived network and write DIR/model.autoreg.", ' ', "0.1");
  const SchemaArgs<pipeline::SearchSettings> options(cmd, pipeline::search_schema(), defaults);  // every option, from its row
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  // What only a command line can say wrongly; the values are pipeline::validate's.
  check_scale_out(options);
  const pipeline::SearchSettings s = options.settings(defaults);
  if (s.scale.nproc == 0 && s.threads > 0) at::set_num_threads(s.threads);  // a supervisor's ranks get theirs
  pipeline::install_stop_handlers();
  if (s.evaluate) {
    pipeline::evaluate_search(s);
  } else {
    pipeline::search(s);
  }
  return kOk;
}

}  // namespace autoreg::apps
