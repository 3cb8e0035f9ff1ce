#include "autoreg/base/atomic_file.h"
#include "autoreg/runs/register_pairs.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include "autoreg/base/csv.h"
#include "autoreg/base/stopwatch.h"
#include "autoreg/io/manifest.h"
#include "autoreg/qc/picture.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/pair/output_files.h"
#include "register_shards.h"

namespace autoreg::pipeline {
namespace {

using detail::choose_shard;
using detail::merge_shard_summaries;
using detail::Shard;

namespace fs = std::filesystem;

struct Pair {
  RegisterJob params;
  std::string name;    // <moving>_to_<fixed>, unique in the run
  std::string report;  // its summary, written last
  int line = 0;
};

std::vector<Pair> read_pairs(const RegisterJob& base, const std::string& csv, const std::string& dir,
                             bool inverse) {
  enum { kFixed, kMoving, kMovingLabels, kFixedLabels, kFixedPoints, kMovingPoints, kFixedMask, kMovingMask,
         kMovingContours, kFixedContours };
  const std::vector<io::CsvRow> rows = io::read_csv(
      csv, {"fixed", "moving", "moving_labels", "fixed_labels", "fixed_points", "moving_points", "fixed_mask", "moving_mask",
            "moving_contours", "fixed_contours"},
      {"fixed", "moving"},
      "pairs file");
  if (rows.empty()) throw io::IoError(csv + ": lists no pairs (a header fixed,moving and one row per pair)");
  std::vector<Pair> pairs;
  std::set<std::string> names;
  for (const io::CsvRow& row : rows) {
    Pair pair;
    pair.line = row.line;
    RegisterJob& p = pair.params;
    p = base;
    p.fixed = io::path_beside(csv, row.fields[kFixed]);
    p.moving = io::path_beside(csv, row.fields[kMoving]);
    p.moving_labels = io::path_beside(csv, row.fields[kMovingLabels]);
    p.fixed_labels = io::path_beside(csv, row.fields[kFixedLabels]);
    p.fixed_points = io::path_beside(csv, row.fields[kFixedPoints]);
    p.moving_points = io::path_beside(csv, row.fields[kMovingPoints]);
    p.fixed_mask = io::path_beside(csv, row.fields[kFixedMask]);
    p.moving_mask = io::path_beside(csv, row.fields[kMovingMask]);
    p.moving_contours = io::path_beside(csv, row.fields[kMovingContours]);
    p.fixed_contours = io::path_beside(csv, row.fields[kFixedContours]);
    if (p.moving_contours.empty() && !p.fixed_contours.empty()) {
      throw io::IoError(csv + ":" + std::to_string(row.line) +
                        ": fixed_contours scores the structures carried from moving_contours; give both");
    }
    if (p.fixed.empty() || p.moving.empty()) {
      throw io::IoError(csv + ":" + std::to_string(row.line) + ": a pair needs a fixed and a moving image");
    }
    pair.name = file_stem(p.moving) + "_to_" + file_stem(p.fixed);
    if (!names.insert(pair.name).second) pair.name += "_line" + std::to_string(row.line);
    const std::string out = (fs::path(dir) / pair.name).string();
    p.out_warped = out + "_warped.nii.gz";
    p.out_field = out + "_field.nii.gz";
    p.out_labels = p.moving_labels.empty() ? "" : out + "_labels.nii.gz";
    p.out_contours = p.moving_contours.empty() ? "" : out + "_contours.dcm";  // an RT Structure Set on the fixed series
    p.out_inverse_field = inverse ? out + "_inverse_field.nii.gz" : "";
    p.qc = out + "_qc.png";
    pair.report = out + ".json";
    pairs.push_back(pair);
  }
  return pairs;
}

// A pair whose summary and outputs are all there (outputs are renamed into place whole,
// the summary after them).
bool complete(const Pair& pair) {
  for (const std::string* f : {&pair.report, &pair.params.out_warped, &pair.params.out_field, &pair.params.out_labels,
                               &pair.params.out_inverse_field, &pair.params.qc, &pair.params.out_contours}) {
    std::error_code ec;
    if (!f->empty() && !fs::is_regular_file(*f, ec)) return false;
  }
  try {
    std::ifstream in(pair.report);
    return !nlohmann::json::parse(in).is_discarded();
  } catch (const std::exception&) {
    return false;
  }
}

std::string csv_field(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return base::csv_field(v.get<std::string>());
  return v.dump();
}

// The mean Dice of a pair's carried structures against the fixed structure set's (null
// without one).
nlohmann::json contours_dice(const nlohmann::json& r) {
  if (!r.contains("contours")) return nullptr;
  double sum = 0;
  int n = 0;
  for (const auto& s : r["contours"]["structures"]) {
    if (s.contains("dice") && s["dice"].is_number()) sum += s["dice"].get<double>(), ++n;
  }
  return n ? nlohmann::json(sum / n) : nlohmann::json();
}

// summary.csv: one row per pair, the stages' seconds as columns.
std::string summary_csv(const nlohmann::json& rows) {
  std::set<std::string> stage_names;
  for (const auto& r : rows) {
    if (r.contains("stage_seconds")) {
      for (const auto& [k, v] : r["stage_seconds"].items()) stage_names.insert(k);
    }
  }
  const std::vector<std::string> columns = {"pair", "fixed", "moving", "status", "seconds", "dice", "contours_dice", "tre_mm",
                                            "non_positive_jacobian_percent", "peak_memory_mib", "warnings", "error"};
  std::string text;
  for (const auto& c : columns) text += (text.empty() ? "" : ",") + c;
  for (const auto& s : stage_names) text += ",seconds_" + s;
  text += "\n";
  for (const auto& r : rows) {
    std::string line;
    for (const auto& c : columns) {
      nlohmann::json v = r.value(c, nlohmann::json());
      if (c == "contours_dice") v = contours_dice(r);
      if (c == "warnings") {  // the failed checks' names, ';'-separated
        std::string names;
        for (const auto& w : v.is_array() ? v : nlohmann::json::array()) names += (names.empty() ? "" : ";") + w.value("check", "");
        v = names;
      }
      line += (line.empty() ? "" : ",") + csv_field(v);
    }
    for (const auto& s : stage_names) {
      line += "," + (r.contains("stage_seconds") ? csv_field(r["stage_seconds"].value(s, nlohmann::json())) : "");
    }
    text += line + "\n";
  }
  return text;
}

// index.html: every pair's picture beside its figures, worst first.
void write_index(const std::string& path, const nlohmann::json& rows, const std::string& pairs_csv) {
  const auto number = [](const nlohmann::json& r, const char* key) {
    return r.contains(key) && r[key].is_number() ? r[key].get<double>() : qc::kNoValue;
  };
  std::vector<qc::IndexRow> index;
  for (const auto& r : rows) {
    qc::IndexRow row;
    row.name = r["pair"].get<std::string>();
    const bool ok = r["status"] != "failed" && r["status"] != "missing";
    row.status = ok ? "ok" : "failed";
    row.picture = ok ? row.name + "_qc.png" : "";
    row.error = r.value("error", "");
    row.dice = number(r, "dice");
    row.tre_mm = number(r, "tre_mm");
    row.folding_percent = number(r, "non_positive_jacobian_percent");
    row.seconds = number(r, "seconds");
    if (r.contains("warnings") && r["warnings"].is_array()) {
      for (const auto& w : r["warnings"]) row.warning += (row.warning.empty() ? "WARNING: " : "; ") + w.value("message", "");
    }
    index.push_back(row);
  }
  qc::write_index_html(path, index, "autoreg register --pairs " + pairs_csv);
}

// <stem>.json and <stem>.csv in `out_dir`, and with `index` the page of the whole run.
void write_summary(const std::string& out_dir, const std::string& stem, const nlohmann::json& summary,
                   const std::string& pairs_csv, bool index) {
  base::write_file_atomically((fs::path(out_dir) / (stem + ".json")).string(), summary.dump(1) + "\n");
  base::write_file_atomically((fs::path(out_dir) / (stem + ".csv")).string(), summary_csv(summary["pairs"]));
  if (index) write_index((fs::path(out_dir) / "index.html").string(), summary["pairs"], pairs_csv);
}

// The pairs among `rows` whose registration a failure check warned about.
int warned_pairs(const nlohmann::json& rows) {
  int warned = 0;
  for (const auto& r : rows) warned += r.contains("warnings") && r["warnings"].is_array() && !r["warnings"].empty();
  return warned;
}

PairsOutcome outcome(int failed, int missing, size_t n, const std::string& csv, int warned) {
  PairsOutcome o;
  o.pairs = n;
  o.warned = warned;
  o.failed = failed;
  o.missing = missing;
  o.summary_csv = csv;
  return o;
}

// The run's summary from its shards' (register_shards.h).
PairsOutcome merge(const BatchOptions& b) {
  const std::vector<Pair> pairs = read_pairs(RegisterJob{}, b.pairs_csv, b.out_dir, false);
  std::vector<std::string> names;
  for (const Pair& pair : pairs) names.push_back(pair.name);
  nlohmann::json summary = merge_shard_summaries(b.out_dir, names, b.allow_missing);
  std::map<std::string, int> count;
  for (size_t i = 0; i < pairs.size(); ++i) {
    nlohmann::json& row = summary["pairs"][i];
    row["fixed"] = pairs[i].params.fixed;
    row["moving"] = pairs[i].params.moving;
    ++count[row["status"].get<std::string>()];
  }
  summary["done"] = count["done"];
  summary["skipped"] = count["done before (--resume)"];
  summary["failed"] = count["failed"];
  summary["missing"] = count["missing"];
  write_summary(b.out_dir, "summary", summary, b.pairs_csv, true);
  const std::string csv = b.out_dir + "/summary.csv";
  std::printf("merged %zu shard summaries: %d of %zu pairs registered (%d done before), %d failed, %d missing; "
              "summary in %s\n", summary["shards"].size(), count["done"] + count["done before (--resume)"], pairs.size(),
              count["done before (--resume)"], count["failed"], count["missing"], csv.c_str());
  return outcome(count["failed"], count["missing"], pairs.size(), csv, warned_pairs(summary["pairs"]));
}

}  // namespace

PairsOutcome run_pairs(RegisterJob base, const BatchOptions& b) {
  if (b.merge) return merge(b);
  const auto start = std::chrono::steady_clock::now();
  const std::optional<Shard> shard = choose_shard(b.shard);
  std::vector<Pair> pairs = read_pairs(base, b.pairs_csv, b.out_dir, b.inverse);
  if (shard) {
    std::vector<Pair> mine;
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (shard->has(i)) mine.push_back(std::move(pairs[i]));
    }
    std::fprintf(stderr, "autoreg register: shard %d/%d from %s: %zu of %zu pairs\n", shard->index + 1, shard->count,
                 shard->source.c_str(), mine.size(), pairs.size());
    pairs = std::move(mine);
  }
  make_output_folder("--out-dir", b.out_dir);
  // Every pair shares base's model, read once (pair_options).
  if (b.inverse) check_invertible(base.options);

  const size_t n = pairs.size();
  std::vector<bool> skip(n);
  for (size_t i = 0; i < n; ++i) skip[i] = b.resume && complete(pairs[i]);
  // The next pair to register is read on another thread while the current one runs.
  struct Read {
    PairInputs inputs;
    double seconds = 0;
  };
  const auto read = [](const RegisterJob& p) {
    const auto t = std::chrono::steady_clock::now();
    Read r{read_pair_inputs(p), 0};
    r.seconds = base::seconds_since(t);
    return r;
  };
  const auto next_to_read = [&](size_t from) {
    while (from < n && skip[from]) ++from;
    return from;
  };
  std::future<Read> ahead;
  size_t ahead_index = next_to_read(0);
  if (ahead_index < n) ahead = std::async(std::launch::async, read, pairs[ahead_index].params);

  nlohmann::json rows = nlohmann::json::array();
  int failed = 0, done = 0, skipped = 0;
  for (size_t i = 0; i < n; ++i) {
    const Pair& pair = pairs[i];
    const std::string label = "pair " + std::to_string(i + 1) + "/" + std::to_string(n) + " " + pair.name;
    nlohmann::json row;
    if (skip[i]) {
      std::ifstream in(pair.report);
      row = nlohmann::json::parse(in);
      row["status"] = "done before (--resume)";
      ++skipped;
      std::fprintf(stderr, "%s: complete, skipped (--resume)\n", label.c_str());
    } else {
      StageTimes times;
      try {
        Read r = ahead.get();
        ahead_index = next_to_read(i + 1);
        if (ahead_index < n) ahead = std::async(std::launch::async, read, pairs[ahead_index].params);
        times.lap("read");  // the wait for it; it was read in r.seconds beside the previous pair
        for (const std::string* out : {&pair.params.out_warped, &pair.params.out_field, &pair.params.out_labels,
                                       &pair.params.out_inverse_field, &pair.params.qc, &pair.params.out_contours}) {
          if (!out->empty()) io::check_output(*out);
        }
        row = register_inputs(pair.params, std::move(r.inputs), times);
        row["read_seconds"] = r.seconds;
        row["status"] = "done";
        base::write_file_atomically(pair.report, row.dump(1) + "\n");
        ++done;
        const std::string dice = row["dice"].is_null() ? "" : ", Dice " + std::to_string(row["dice"].get<double>()).substr(0, 6);
        std::fprintf(stderr, "%s: %.1f s%s, %.3f %% of voxels fold\n", label.c_str(), row["seconds"].get<double>(),
                     dice.c_str(), row["non_positive_jacobian_percent"].get<double>());
        for (const auto& w : row["warnings"]) {
          std::fprintf(stderr, "%s: warning: %s: %s\n", label.c_str(), w["check"].get<std::string>().c_str(),
                       w["message"].get<std::string>().c_str());
        }
      } catch (const std::exception& e) {
        // The read of the next pair is started even when this one failed to read.
        if (ahead_index == i) {
          ahead_index = next_to_read(i + 1);
          if (ahead_index < n) ahead = std::async(std::launch::async, read, pairs[ahead_index].params);
        }
        std::string what = e.what();
        what = what.substr(0, what.find('\n'));
        row = {{"status", "failed"}, {"error", what}};
        ++failed;
        std::fprintf(stderr, "%s (%s:%d): failed, skipped: %s\n", label.c_str(), b.pairs_csv.c_str(), pair.line, what.c_str());
      }
    }
    row["pair"] = pair.name;
    row["fixed"] = pair.params.fixed;
    row["moving"] = pair.params.moving;
    rows.push_back(row);
  }
  nlohmann::json summary = {{"pairs", rows},         {"done", done},   {"skipped", skipped},
                            {"failed", failed},      {"seconds", base::seconds_since(start)},
                            {"peak_memory_mib", peak_resident_mib()}};
  // A shard's summary beside the others', for --merge; the run's page comes with the merge.
  if (shard) summary["shard"] = {{"index", shard->index + 1}, {"count", shard->count}, {"from", shard->source}};
  const std::string stem = shard ? shard->summary_stem() : "summary";
  write_summary(b.out_dir, stem, summary, b.pairs_csv, !shard);
  const std::string csv = b.out_dir + "/" + stem + ".csv";
  std::printf("%d of %zu pairs registered in %.1f s (%d done before), %d failed; summary in %s\n", done, n,
              base::seconds_since(start), skipped, failed, csv.c_str());
  if (shard) std::printf("with every shard done, --merge writes the run's summary.csv, summary.json and index.html\n");
  return outcome(failed, 0, n, csv, warned_pairs(rows));
}

}  // namespace autoreg::pipeline
