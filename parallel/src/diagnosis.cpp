#include "diagnosis.h"

#include <signal.h>

#include <algorithm>
#include <cstring>

namespace autoreg::parallel::detail {
namespace {

std::string signal_name(int s) {
  const char* abbrev = sigabbrev_np(s);
  return std::string("SIG") + (abbrev ? abbrev : std::to_string(s).c_str());
}

std::string how_it_ended(const Rank& r) {
  if (r.killed_by_us) {
    return std::string("killed by the supervisor (") + (r.state == 'T' || r.state == 't' ? "stopped" : "still running") + ")";
  }
  if (WIFSIGNALED(r.status)) return "ended by " + signal_name(WTERMSIG(r.status));
  return "exit " + std::to_string(WEXITSTATUS(r.status));
}

std::string last_error_line(const Rank& r);

// How a rank ended, and its last error line when it has one.
std::string ended(const Rank& r) {
  const std::string line = last_error_line(r);
  return how_it_ended(r) + (line.empty() ? "" : ": " + line);
}

std::string last_error_line(const Rank& r) {
  if (r.report.contains("message")) return r.report["message"].get<std::string>();
  for (auto it = r.last.rbegin(); it != r.last.rend(); ++it) {
    if (!it->empty()) return *it;
  }
  return "";
}

std::string report_class(const Rank& r) {
  return r.report.contains("class") ? r.report["class"].get<std::string>() : classify_message(last_error_line(r));
}

}  // namespace

bool failed(const Rank& r) { return !(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0); }

// The failure behind an attempt's end: the rank whose failure caused the others'.
Failure diagnose(const std::vector<Rank>& ranks, bool oom_killed, int* exit_code) {
  Failure f;
  *exit_code = 3;
  for (const Rank& r : ranks) f.step = std::max(f.step, r.step);
  const auto pick = [&](int k, const std::string& cls, const std::string& evidence) {
    f.rank = k;
    f.cls = cls;
    f.evidence = "rank " + std::to_string(k) + ": " + evidence;
    const Rank& r = ranks[size_t(k)];
    if (WIFEXITED(r.status) && !r.killed_by_us) *exit_code = WEXITSTATUS(r.status);
    return f;
  };
  const int n = int(ranks.size());
  // 1. A failure that a restart would repeat.
  for (int k = 0; k < n; ++k) {
    const Rank& r = ranks[size_t(k)];
    if (!failed(r) || r.killed_by_us) continue;
    const std::string cls = report_class(r);
    if (!restartable(cls)) return pick(k, cls, ended(r));
  }
  // 2. Out of memory: the kernel's OOM killer, or an allocation that failed.
  for (int k = 0; k < n; ++k) {
    const Rank& r = ranks[size_t(k)];
    if (!failed(r) || r.killed_by_us) continue;
    if (report_class(r) == "out_of_memory") return pick(k, "out_of_memory", ended(r));
    if (oom_killed && WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL) {
      return pick(k, "out_of_memory", how_it_ended(r) + " (the kernel's OOM killer: memory.events oom_kill rose)");
    }
  }
  // 3. A rank that died by a signal that was not ours.
  for (int k = 0; k < n; ++k) {
    const Rank& r = ranks[size_t(k)];
    if (WIFSIGNALED(r.status) && !r.killed_by_us) return pick(k, "worker_lost", how_it_ended(r));
  }
  // 4. A rank that did not answer while its peers timed out: hung (or stopped).
  bool timeouts = false;
  for (const Rank& r : ranks) timeouts = timeouts || (failed(r) && !r.killed_by_us && report_class(r) == "collective_timeout");
  for (int k = 0; k < n; ++k) {
    const Rank& r = ranks[size_t(k)];
    if (r.killed_by_us && (timeouts || r.state == 'T' || r.state == 't')) {
      return pick(k, "collective_timeout",
                  std::string("did not answer its peers (process state ") + r.state + (r.state == 'T' || r.state == 't' ? ": stopped" : "") +
                      "); " + (timeouts ? "its peers' collective timed out" : "killed after the others failed"));
    }
  }
  // 5. A rank that failed by itself (its peers then lost their connection to it).
  for (int k = 0; k < n; ++k) {
    const Rank& r = ranks[size_t(k)];
    if (!failed(r) || r.killed_by_us) continue;
    const std::string cls = report_class(r);
    if (cls != "worker_lost" && cls != "collective_timeout") return pick(k, cls, ended(r));
  }
  for (int k = 0; k < n; ++k) {
    const Rank& r = ranks[size_t(k)];
    if (failed(r)) return pick(k, report_class(r), ended(r));
  }
  return pick(0, "failure", "ended without a failing rank");
}

}  // namespace autoreg::parallel::detail
