// The search's decoupled evaluation (docs/distributed.md): the same `autoreg search`
// command line (search_job.h, to_arguments) with --evaluate, a process of its own that watches
// DIR/search.ckpt and evaluates each new checkpoint as the search would validate it (the
// network being searched, on the labelled validation pairs: Dice, folding), appending a
// line to DIR/search.validation.jsonl and keeping the best checkpoint as
// DIR/search.best.ckpt. The search starts it by default (rank 0) and reads its lines into
// its log and report as they arrive; it can also run on another machine sharing DIR.
#pragma once

#include <memory>

#include "autoreg/search/searcher.h"
#include "search_stages.h"
#include "validation_process.h"

namespace autoreg::pipeline::detail {

// --evaluate: waits for the search's first checkpoint, then evaluates until the search
// has exported its genotype (DIR/genotype.json) or a stop is asked for.
void evaluate_search(SearchParams p);

// Started by the search (rank 0): the watcher process, this search's command line with
// --evaluate.
// `fresh`: a new search (earlier results removed).
std::unique_ptr<ValidationProcess> start_search_evaluation(const SearchParams& p, const Paths& out, bool fresh);

// At the end of the search: lets the watcher evaluate the last checkpoint, ends it, and
// notes that evaluation's Dice in the searcher (the summary's validation Dice).
void finish_search_evaluation(ValidationProcess& watcher, search::Searcher& searcher, const Paths& out);

}  // namespace autoreg::pipeline::detail
