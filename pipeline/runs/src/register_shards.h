// Internal to the pipeline (register_pairs.cpp): `autoreg register --pairs` across machines: which shard of the pairs one process
// registers (--shard K/N, or a job array's index), and joining the shards' summaries.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace autoreg::pipeline::detail {

// Shard `index` (0-based) of `count` registers the pairs whose 0-based row i has
// i % count == index.
struct Shard {
  int index = 0;
  int count = 1;
  std::string source;  // where it was taken from, for the log line

  bool has(size_t row) const { return static_cast<int>(row % count) == index; }
  // "summary.shard-K-of-N" (K 1-based): the shard's summary files add .json and .csv.
  std::string summary_stem() const;
};

// `option` ("K/N", 1 <= K <= N) when given, else the index of a job array: Slurm's
// SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT, or a Kubernetes
// indexed Job's JOB_COMPLETION_INDEX of AUTOREG_SHARD_COUNT; nullopt when neither is
// there. A malformed or out-of-range value, or an index without its count, is a
// base::UsageError naming it.
std::optional<Shard> choose_shard(const std::string& option);

// The shards' summaries in `out_dir` (summary.shard-K-of-N.json) joined: {"pairs": one row
// per name of `pairs`, in its order; "shards": the summaries' file names; "seconds": theirs
// added; "peak_memory_mib": the most}. A pair in no summary is refused, or with
// `allow_missing` gets {"status": "missing"}. Throws IoError naming the pairs that are
// missing, in two summaries, or not in `pairs` (a summary of another pairs file), and a
// summary that cannot be read.
nlohmann::json merge_shard_summaries(const std::string& out_dir, const std::vector<std::string>& pairs,
                                     bool allow_missing);

}  // namespace autoreg::pipeline::detail
