#include "autoreg/parallel/failure.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <new>
#include <stdexcept>

namespace autoreg::parallel {
namespace {

bool has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string now_iso() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", std::gmtime(&t));
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", text, int(ms));
  return out;
}

}  // namespace

bool restartable(const std::string& cls) {
  return cls == "worker_lost" || cls == "out_of_memory" || cls == "collective_timeout" || cls == "failure";
}

std::string classify_message(const std::string& m) {
  if (has(m, "faulty steps in a row")) return "non_finite";
  if (has(m, "out of memory") || has(m, "std::bad_alloc") || has(m, "Cannot allocate memory")) return "out_of_memory";
  if (has(m, "No space left on device") || has(m, "Disk quota exceeded")) return "disk_full";
  // Gloo's errors for a peer that went away, and c10d's store errors for one that never came.
  if (has(m, "Timed out") || has(m, "timed out") || has(m, "Timeout") || has(m, "timeout")) return "collective_timeout";
  if (has(m, "Connection closed by peer") || has(m, "Connection reset by peer") || has(m, "Broken pipe") ||
      has(m, "Connection refused") || has(m, "IoException") || has(m, "no rendezvous")) {
    return "worker_lost";
  }
  return "failure";
}

std::string classify_exception(const std::exception& e, int exit_code) {
  const std::string m = e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const c10::OutOfMemoryError*>(&e)) return "out_of_memory";
  if (dynamic_cast<const c10::DistError*>(&e)) return classify_message(m) == "collective_timeout" ? "collective_timeout" : "worker_lost";
  const std::string by_message = classify_message(m);
  if (by_message != "failure") return by_message;
  if (exit_code == 1 || exit_code == 2) return "bad_input";  // a usage error or bad input: the same again
  // A failed check inside LibTorch (a shape, a dtype) or our own logic: the same input
  // fails the same way after a restart.
  if (dynamic_cast<const std::logic_error*>(&e) || dynamic_cast<const c10::Error*>(&e)) return "programming_error";
  return "failure";
}

Failure rolled_back(int64_t step, int64_t rollbacks, const std::string& sizes) {
  return {"non_finite", "a non-finite loss or gradient, or a gradient spike", 0, step,
          "rolled back to the last good state at " + sizes + " (" + std::to_string(rollbacks) +
              " rollbacks so far)"};
}

Failure skipped_row(const std::string& what) { return {"unreadable_data", what, 0, -1, "skipped"}; }

void append_failure(const std::string& path, const Failure& f) {
  nlohmann::json line = {{"time", now_iso()}, {"rank", f.rank}, {"step", f.step}, {"class", f.cls},
                         {"evidence", first_line(f.evidence)}, {"action", f.action}};
  std::ofstream out(path, std::ios::app);
  out << line.dump() << "\n" << std::flush;
  if (!out) throw std::runtime_error(path + ": cannot append the failure line");
}

int64_t oom_kill_count() {
  std::ifstream events("/sys/fs/cgroup/memory.events");
  std::string key;
  int64_t value = 0;
  while (events >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return -1;
}

}  // namespace autoreg::parallel
