#include "autoreg/parallel/evaluation.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

namespace autoreg::parallel {
namespace {

namespace fs = std::filesystem;

std::optional<fs::file_time_type> modified(const std::string& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  return ec ? std::nullopt : std::optional<fs::file_time_type>(t);
}

}  // namespace

std::vector<EvaluatedStep> read_evaluations(const std::string& results, int64_t after_step) {
  std::vector<EvaluatedStep> out;
  std::ifstream in(results);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step")) continue;  // a line being written
    const int64_t step = j["step"].get<int64_t>();
    if (step <= after_step) continue;
    const auto number = [&](const char* key) {
      return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::nan("");
    };
    out.push_back({step, number("validation_dice"), number("folding_percent"), number("seconds"), j.value("best", false)});
  }
  return out;
}

int64_t watch_checkpoints(const WatchOptions& o,
                          const std::function<Evaluation(const registration::Archive&, const std::string&)>& evaluate) {
  int64_t last = -1, evaluated = 0;
  double best = -1;
  for (const EvaluatedStep& e : read_evaluations(o.results, -1)) {
    last = std::max(last, e.step);
    if (std::isfinite(e.dice)) best = std::max(best, e.dice);
  }
  std::optional<fs::file_time_type> seen;
  while (true) {
    const bool stopping = o.stop && o.stop();
    const auto when = modified(o.checkpoint);
    if (when && when != seen) {
      seen = when;
      registration::Archive a;
      bool read = false;
      try {
        a = registration::read_archive(o.checkpoint, o.kind);
        read = true;
      } catch (const registration::ModelFileError& e) {
        // Replaced while being read (the run renames a new one into place): next poll.
        seen.reset();
        if (o.progress) o.progress(std::string("checkpoint not readable yet: ") + e.what());
      }
      const int64_t step = read && a.has_field(o.step_field) ? std::stoll(a.field(o.step_field, o.checkpoint)) : -1;
      if (read && step > last) {
        const auto start = std::chrono::steady_clock::now();
        const Evaluation e = evaluate(a, o.checkpoint);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const bool is_best = std::isfinite(e.dice) && e.dice > best;
        if (is_best) {
          best = e.dice;
          if (!o.best.empty()) registration::write_archive(o.best, o.kind, a);
          if (o.on_best) o.on_best(a, o.checkpoint);
        }
        nlohmann::json line = {{"step", step}, {"pairs", e.pairs}, {"seconds", seconds}, {"best", is_best}};
        if (std::isfinite(e.dice)) line["validation_dice"] = e.dice;
        if (std::isfinite(e.folding_percent)) line["folding_percent"] = e.folding_percent;
        std::ofstream(o.results, std::ios::app) << line.dump() << "\n" << std::flush;
        if (o.progress) {
          char text[160];
          std::snprintf(text, sizeof text, "step %lld: validation Dice %.4f, folding %.3f %%, %.1f s%s", (long long)step,
                        e.dice, e.folding_percent, seconds, is_best ? " (best so far)" : "");
          o.progress(text);
        }
        last = step;
        ++evaluated;
        continue;  // look again at once: the run may have written another meanwhile
      }
    }
    if (stopping) return evaluated;
    // The run has ended: its model is newer than its last checkpoint, which is evaluated.
    const auto done = o.finished.empty() ? std::nullopt : modified(o.finished);
    if (done && when && *done >= *when && seen == when) return evaluated;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_seconds));
  }
}

std::optional<EvaluatedStep> EvaluationFollower::latest() {
  std::error_code ec;
  const auto size = fs::file_size(results_, ec);
  if (ec || size == size_) return std::nullopt;
  size_ = size;
  const auto arrived = read_evaluations(results_, step_);
  if (arrived.empty()) return std::nullopt;
  step_ = arrived.back().step;
  return arrived.back();
}

}  // namespace autoreg::parallel
