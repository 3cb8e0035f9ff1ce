// `autoreg register --pairs pairs.csv --out-dir DIR [--resume]`: many pairs in one run.
#pragma once

#include <string>

#include "register_run.h"

namespace autoreg::apps {

// Registers every pair of `pairs_csv` (columns fixed, moving, optional moving_labels,
// fixed_labels; paths relative to it) with the settings of `base`, the model loaded once
// and the next pair read while the current one registers. Outputs in `out_dir`, named
// <moving>_to_<fixed>_{warped,field,labels}.nii.gz (and _inverse_field with `inverse`),
// each pair's summary in
// <moving>_to_<fixed>.json (written last: a pair with it is complete), and summary.csv /
// summary.json for the run. A pair that fails is reported and skipped. With `resume`,
// complete pairs are not registered again. Returns the exit code: 0, or kSomePairsFailed.
int run_pairs(RegisterParams base, const std::string& pairs_csv, const std::string& out_dir, bool resume,
              bool inverse);

}  // namespace autoreg::apps
