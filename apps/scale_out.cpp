#include "scale_out.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/process.h"
#include "autoreg/parallel/process_group.h"
#include "autoreg/parallel/supervisor.h"
#include "autoreg/parallel/worker.h"
#include "exit_codes.h"

namespace autoreg::apps {

ScaleOutArgs::ScaleOutArgs(TCLAP::CmdLine& cmd)
    : nproc("", "nproc", "run N data-parallel ranks on this machine, supervised (each with --threads threads; default: one process)", false, 0, "N", cmd),
      max_restarts("", "max-restarts", "with --nproc: restart the ranks from the last checkpoint after a failure, up to R times (default 0)", false, 0, "R", cmd),
      collective_timeout("", "collective-timeout", "seconds a rank waits for the others in a collective before it is a failure (a hung rank; default 600)", false, 600, "S", cmd) {}

std::vector<std::string> arguments_without(int argc, char** argv, const std::vector<std::string>& options) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    bool dropped = false;
    for (const auto& o : options) {
      if (a == o) {
        ++i;  // and its value
        dropped = true;
      } else if (a.rfind(o + "=", 0) == 0) {
        dropped = true;
      }
    }
    if (!dropped) out.push_back(a);
  }
  return out;
}

std::optional<int> supervise_if_asked(const ScaleOutArgs& args, int argc, char** argv, const std::string& subcommand,
                                      int threads, const std::string& failures) {
  if (args.max_restarts.getValue() < 0) throw UsageError("--max-restarts must be >= 0");
  if (!(args.collective_timeout.getValue() > 0)) throw UsageError("--collective-timeout must be > 0");
  if (!args.nproc.isSet()) {
    if (args.max_restarts.isSet()) throw UsageError("--max-restarts needs --nproc (under torchrun: --max-restarts of torchrun)");
    return std::nullopt;
  }
  if (args.nproc.getValue() < 1) throw UsageError("--nproc must be at least 1");
  if (std::getenv("AUTOREG_WORKER_STATUS") || std::getenv("RANK")) {
    throw UsageError("--nproc inside a launcher (RANK is set): let the launcher start the ranks");
  }
  parallel::SupervisorOptions o;
  o.command = {parallel::this_executable(), subcommand};
  // This command's arguments without the launcher's own options.
  for (const auto& a : arguments_without(argc, argv, {"--nproc", "--max-restarts"})) o.command.push_back(a);
  o.nproc = args.nproc.getValue();
  o.threads = threads;
  o.max_restarts = args.max_restarts.getValue();
  o.collective_timeout_s = args.collective_timeout.getValue();
  o.failures = failures;
  o.label = "autoreg " + subcommand;
  std::fprintf(stderr, "%s: %d ranks on this machine%s, %s; failures in %s\n", o.label.c_str(), o.nproc,
               threads > 0 ? (", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") + " each").c_str() : "",
               o.max_restarts == 0 ? "no restarts (--max-restarts)" : ("up to " + std::to_string(o.max_restarts) + " restarts").c_str(),
               failures.c_str());
  return parallel::supervise(o);
}

void diagnose_own_failure(const Distributed& d, const std::exception& e, int exit_code, const std::string& failures) {
  if (!d.rendezvous || std::getenv("AUTOREG_WORKER_STATUS")) return;
  parallel::Failure f;
  f.cls = parallel::classify_exception(e, exit_code);
  f.evidence = e.what();
  f.rank = d.rank();
  f.step = parallel::reported_step();
  f.action = parallel::restartable(f.cls) ? "ended; " + d.rendezvous->source + " may restart the ranks (they resume from the checkpoint)"
                                          : "ended: a restart would fail the same way";
  try {
    parallel::append_failure(failures, f);
  } catch (const std::exception&) {  // the failure being reported may be the disk's
  }
}

Distributed join_if_distributed(const ScaleOutArgs& args, const std::string& device) {
  Distributed d;
  try {
    d.rendezvous = parallel::rendezvous_from_environment();
    d.restart_count = parallel::restart_count_from_environment();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  parallel::attach_to_supervisor();
  if (!d.rendezvous) return d;
  const auto& r = *d.rendezvous;
  if (r.rank == 0) {
    std::fprintf(stderr, "rank 0 of %d (%s), rendezvous at %s:%d%s\n", r.world, r.source.c_str(), r.master_addr.c_str(),
                 r.master_port, r.restart_count > 0 ? (", restart " + std::to_string(r.restart_count)).c_str() : "");
  }
  const auto timeout = std::chrono::milliseconds(int64_t(args.collective_timeout.getValue() * 1000));
  d.collective = parallel::connect(r, device, timeout, std::chrono::minutes(5));
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

}  // namespace autoreg::apps
