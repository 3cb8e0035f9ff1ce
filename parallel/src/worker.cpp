#include "autoreg/parallel/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "autoreg/base/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <stdexcept>
#include <system_error>

#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/rendezvous.h"

namespace autoreg::parallel {
namespace {

const char* status_path() {
  const char* p = std::getenv("AUTOREG_WORKER_STATUS");
  return p && *p ? p : nullptr;
}

int64_t g_step = -1;

}  // namespace

void attach_to_supervisor() {
  const char* supervisor = std::getenv("AUTOREG_SUPERVISOR_PID");
  if (!supervisor || !*supervisor) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The supervisor may have died before the line above: then this process's parent is another.
  if (std::atol(supervisor) != long(getppid())) _exit(3);
}

void report_step(int64_t step) {
  g_step = step;
  const char* base = status_path();
  if (!base) return;
  static int fd = -2;
  if (fd == -2) fd = ::open((std::string(base) + ".step").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd, &step, sizeof step, 0);
  }
}

int64_t reported_step() { return g_step; }

void report_failure(const std::exception& e, int exit_code) {
  const char* status = status_path();
  if (!status) return;
  std::string message = e.what();
  message = message.substr(0, message.find('\n'));
  const nlohmann::json report = {
      {"class", classify_exception(e, exit_code)}, {"message", message}, {"step", g_step}, {"exit_code", exit_code}};
  // Best effort: the process is ending with an error already; the supervisor that finds
  // no report diagnoses it from the exit status.
  try {
    base::write_file_atomically(std::string(status) + ".failure.json", report.dump() + "\n");
  } catch (const std::exception&) {
  }
}

}  // namespace autoreg::parallel

namespace autoreg::parallel {
namespace {

struct Injection {
  std::string cls;
  int64_t step = -1;
  int rank = 0;
};

const Injection& injection() {
  static const Injection parsed = [] {
    Injection i;
    const char* text = std::getenv("AUTOREG_INJECT_FAILURE");
    if (!text || !*text || restart_count_from_environment() > 0) return i;
    std::string t = text;
    const size_t at = t.find('@');
    if (at == std::string::npos) throw std::invalid_argument("AUTOREG_INJECT_FAILURE: expected <class>@<step>[@<rank>], got " + t);
    i.cls = t.substr(0, at);
    const std::string rest = t.substr(at + 1);
    const size_t at2 = rest.find('@');
    i.step = std::stoll(rest.substr(0, at2));
    if (at2 != std::string::npos) i.rank = std::stoi(rest.substr(at2 + 1));
    static const char* known[] = {"worker_lost", "collective_timeout", "out_of_memory", "disk_full",
                                  "programming_error", "non_finite"};
    bool ok = false;
    for (const char* k : known) ok = ok || i.cls == k;
    if (!ok) throw std::invalid_argument("AUTOREG_INJECT_FAILURE: unknown class " + i.cls);
    return i;
  }();
  return parsed;
}

}  // namespace

void inject_failure(int64_t step, int rank) {
  const Injection& i = injection();
  if (i.cls.empty() || i.step != step || i.rank != rank) return;
  if (i.cls == "worker_lost") ::raise(SIGKILL);
  if (i.cls == "collective_timeout") ::raise(SIGSTOP);
  if (i.cls == "out_of_memory") throw std::bad_alloc();
  if (i.cls == "disk_full") throw std::system_error(ENOSPC, std::generic_category(), "injected: writing the checkpoint");
  if (i.cls == "programming_error") throw std::logic_error("injected: an invariant does not hold");
}

int64_t injected_non_finite_step(int rank) {
  const Injection& i = injection();
  return i.cls == "non_finite" && i.rank == rank ? i.step : -1;
}

}  // namespace autoreg::parallel
