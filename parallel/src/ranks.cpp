#include "autoreg/parallel/ranks.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "autoreg/base/errors.h"
#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/process_group.h"
#include "autoreg/parallel/supervisor.h"
#include "autoreg/parallel/worker.h"

namespace autoreg::parallel {

using base::UsageError;

void validate(const ScaleOut& s) {
  if (s.max_restarts < 0) throw UsageError("--max-restarts must be >= 0");
  if (!(s.collective_timeout_s > 0)) throw UsageError("--collective-timeout must be > 0");
  if (s.nproc < 0) throw UsageError("--nproc must be at least 1");
  if (s.nproc == 0) {
    if (s.max_restarts != 0) throw UsageError("--max-restarts needs --nproc (under torchrun: --max-restarts of torchrun)");
    return;
  }
  if (std::getenv("AUTOREG_WORKER_STATUS") || std::getenv("RANK")) {
    throw UsageError("--nproc inside a launcher (RANK is set): let the launcher start the ranks");
  }
}

void supervise(const ScaleOut& s, const std::vector<std::string>& command, int threads, const std::string& failures,
               const std::string& label) {
  SupervisorOptions o;
  o.command = command;
  o.nproc = s.nproc;
  o.threads = threads;
  o.max_restarts = s.max_restarts;
  o.collective_timeout_s = s.collective_timeout_s;
  o.failures = failures;
  o.label = label;
  std::fprintf(stderr, "%s: %d ranks on this machine%s, %s; failures in %s\n", o.label.c_str(), o.nproc,
               threads > 0 ? (", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") + " each").c_str() : "",
               o.max_restarts == 0 ? "no restarts (--max-restarts)" : ("up to " + std::to_string(o.max_restarts) + " restarts").c_str(),
               failures.c_str());
  const int code = parallel::supervise(o);
  if (code != 0) {
    throw RanksFailed(code, "the ranks ended with exit code " + std::to_string(code) + " (the failures, if any: " +
                                failures + ")");
  }
}

void diagnose_own_failure(const Distributed& d, const std::exception& e, int exit_code, const std::string& failures) {
  if (!d.rendezvous || std::getenv("AUTOREG_WORKER_STATUS")) return;
  Failure f;
  f.cls = classify_exception(e, exit_code);
  f.evidence = e.what();
  f.rank = d.rank();
  f.step = reported_step();
  f.action = restartable(f.cls) ? "ended; " + d.rendezvous->source + " may restart the ranks (they resume from the checkpoint)"
                                : "ended: a restart would fail the same way";
  try {
    append_failure(failures, f);
  } catch (const std::exception&) {  // the failure being reported may be the disk's
  }
}

Distributed join_if_distributed(const ScaleOut& s, const std::string& device) {
  Distributed d;
  try {
    d.rendezvous = rendezvous_from_environment();
    d.restart_count = restart_count_from_environment();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  attach_to_supervisor();
  if (!d.rendezvous) return d;
  const auto& r = *d.rendezvous;
  // A rank writing to a peer that has died gets SIGPIPE, whose default action ends the
  // process at once, before it writes its own failure line. Ignored, the write fails with
  // EPIPE and the collective throws, which the rank diagnoses as the loss of a worker.
  // (Distributed.RanksUnderAnotherLauncherDiagnoseTheirOwnFailures once found rank 0's
  // line missing in a full test run; this is the likeliest cause, not reproduced alone.)
  std::signal(SIGPIPE, SIG_IGN);
  if (r.rank == 0) {
    std::fprintf(stderr, "rank 0 of %d (%s), rendezvous at %s:%d%s\n", r.world, r.source.c_str(), r.master_addr.c_str(),
                 r.master_port, r.restart_count > 0 ? (", restart " + std::to_string(r.restart_count)).c_str() : "");
  }
  const auto timeout = std::chrono::milliseconds(int64_t(s.collective_timeout_s * 1000));
  d.collective = connect(r, device, timeout, std::chrono::minutes(5));
  return d;
}

void lead_first(registration::Collective* collective, bool lead, const std::function<void()>& work) {
  if (!collective) {
    work();
    return;
  }
  std::exception_ptr failure;
  if (lead) {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  collective->barrier();
  if (collective->any(failure != nullptr)) {
    if (failure) std::rethrow_exception(failure);
    throw std::runtime_error("rank 0 failed to prepare the run (its message says why)");
  }
  if (!lead) work();
}

}  // namespace autoreg::parallel
