#include "register_shards.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <tuple>

#include "autoreg/io/volume.h"
#include "autoreg/base/errors.h"

namespace autoreg::pipeline::detail {
namespace {

namespace fs = std::filesystem;

// "12" → 12; anything but 1 to 9 digits → nullopt.
std::optional<int> whole_number(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(s);
}

// An environment variable, nullptr when unset or empty.
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// A set variable's value as a whole number; anything else is a UsageError naming it.
int env_number(const char* name) {
  const std::string value = env(name);
  const std::optional<int> n = whole_number(value);
  if (!n) throw base::UsageError(std::string(name) + "=" + value + " is not a whole number");
  return *n;
}

Shard checked(int index, int count, const std::string& source) {
  if (count < 1 || index < 0 || index >= count) {
    throw base::UsageError(source + ": shard index " + std::to_string(index) + " is not in 0.." + std::to_string(count - 1) +
                     " (a job array needs consecutive indices, e.g. --array=0-7; or give --shard K/N)");
  }
  return Shard{index, count, source};
}

// "a, b, c" with at most 10 names.
std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 10; ++i) s += (i ? ", " : "") + names[i];
  return names.size() > 10 ? s + " and " + std::to_string(names.size() - 10) + " more" : s;
}

}  // namespace

std::string Shard::summary_stem() const {
  return "summary.shard-" + std::to_string(index + 1) + "-of-" + std::to_string(count);
}

std::optional<Shard> choose_shard(const std::string& option) {
  if (!option.empty()) {
    const size_t slash = option.find('/');
    const std::optional<int> k = whole_number(option.substr(0, slash));
    const std::optional<int> n = slash == std::string::npos ? std::nullopt : whole_number(option.substr(slash + 1));
    if (!k || !n) throw base::UsageError("--shard " + option + ": give K/N, e.g. 2/8 for the second of 8 shards");
    if (*n < 1 || *k < 1 || *k > *n) throw base::UsageError("--shard " + option + ": K/N needs 1 <= K <= N");
    return Shard{*k - 1, *n, "--shard"};
  }
  // Slurm counts the array's tasks from SLURM_ARRAY_TASK_MIN (--array=1-8 starts at 1).
  if (const char* id = env("SLURM_ARRAY_TASK_ID")) {
    const char* count = env("SLURM_ARRAY_TASK_COUNT");
    const char* min = env("SLURM_ARRAY_TASK_MIN");
    if (!count) throw base::UsageError(std::string("SLURM_ARRAY_TASK_ID=") + id + " is set but SLURM_ARRAY_TASK_COUNT is not; give --shard K/N");
    const std::string source = std::string("SLURM_ARRAY_TASK_ID=") + id + " (" +
                               (min ? std::string("SLURM_ARRAY_TASK_MIN=") + min + ", " : "") +
                               "SLURM_ARRAY_TASK_COUNT=" + count + ")";
    return checked(env_number("SLURM_ARRAY_TASK_ID") - (min ? env_number("SLURM_ARRAY_TASK_MIN") : 0),
                   env_number("SLURM_ARRAY_TASK_COUNT"), source);
  }
  // A Kubernetes indexed Job sets its pod's index (from 0) but not the number of pods.
  if (const char* index = env("JOB_COMPLETION_INDEX")) {
    const char* count = env("AUTOREG_SHARD_COUNT");
    if (!count) {
      throw base::UsageError(std::string("JOB_COMPLETION_INDEX=") + index + " (a Kubernetes indexed Job) is set but "
                       "AUTOREG_SHARD_COUNT is not: set it to the Job's completions, or give --shard K/N");
    }
    return checked(env_number("JOB_COMPLETION_INDEX"), env_number("AUTOREG_SHARD_COUNT"),
                   std::string("JOB_COMPLETION_INDEX=") + index + " (AUTOREG_SHARD_COUNT=" + count + ")");
  }
  return std::nullopt;
}

nlohmann::json merge_shard_summaries(const std::string& out_dir, const std::vector<std::string>& pairs,
                                     bool allow_missing) {
  static const std::regex kSummary(R"(summary\.shard-([0-9]{1,9})-of-([0-9]{1,9})\.json)");
  std::vector<std::tuple<int, int, std::string>> files;  // N, K, name: read in that order
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, kSummary)) files.emplace_back(std::stoi(m[2]), std::stoi(m[1]), name);
  }
  if (files.empty()) {
    throw io::IoError(out_dir + ": no shard summaries (summary.shard-K-of-N.json) to merge; run the shards first (--shard K/N)");
  }
  std::sort(files.begin(), files.end());

  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < pairs.size(); ++i) row_of[pairs[i]] = i;
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::string> from(pairs.size());  // the summary each row came from
  std::vector<std::string> doubled, unknown, missing;
  nlohmann::json merged = {{"shards", nlohmann::json::array()}, {"seconds", 0.0}, {"peak_memory_mib", 0.0}};
  for (size_t i = 0; i < pairs.size(); ++i) rows.push_back(nlohmann::json::object());
  for (const auto& [n, k, name] : files) {
    const std::string file = (fs::path(out_dir) / name).string();
    try {
      std::ifstream in(file);
      const nlohmann::json s = nlohmann::json::parse(in);
      for (const nlohmann::json& row : s.at("pairs")) {
        const std::string pair = row.at("pair").get<std::string>();
        row.at("status").get<std::string>();  // the merge counts them
        const auto at = row_of.find(pair);
        if (at == row_of.end()) {
          unknown.push_back(pair + " (" + name + ")");
        } else if (!from[at->second].empty()) {
          doubled.push_back(pair + " (" + from[at->second] + " and " + name + ")");
        } else {
          rows[at->second] = row;
          from[at->second] = name;
        }
      }
      merged["seconds"] = merged["seconds"].get<double>() + s.value("seconds", 0.0);
      merged["peak_memory_mib"] = std::max(merged["peak_memory_mib"].get<double>(), s.value("peak_memory_mib", 0.0));
    } catch (const nlohmann::json::exception& e) {
      throw io::IoError(file + ": not a shard summary that can be read (" + e.what() + ")");
    }
    merged["shards"].push_back(name);
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (!from[i].empty()) continue;
    missing.push_back(pairs[i]);
    rows[i] = {{"pair", pairs[i]}, {"status", "missing"}, {"error", "in no shard's summary"}};
  }
  std::string problems;
  if (!unknown.empty()) problems += "; pairs the pairs file does not list: " + listed(unknown);
  if (!doubled.empty()) problems += "; pairs in two shard summaries (remove the stale one): " + listed(doubled);
  if (!missing.empty() && !allow_missing) {
    problems += "; pairs in no shard's summary (run their shards, or merge with --allow-missing): " + listed(missing);
  }
  if (!problems.empty()) throw io::IoError(out_dir + ": cannot merge the shards: " + problems.substr(2));
  merged["pairs"] = rows;
  return merged;
}

}  // namespace autoreg::pipeline::detail
