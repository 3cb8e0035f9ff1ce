#include "autoreg/registration/guarded_run.h"

#include <utility>

namespace autoreg::registration {

GuardedRun::GuardedRun(Setup setup, Hooks hooks)
    : setup_(std::move(setup)),
      hooks_(std::move(hooks)),
      guard_(setup_.spike_factor, setup_.max_rollbacks),
      writer_(setup_.async_checkpoints) {}

void GuardedRun::start() {
  if (setup_.guarded) snapshots_.reset(hooks_.state());
}

void GuardedRun::step(const std::function<Outcome()>& attempt) {
  if (!setup_.guarded) {
    attempt();
    return;
  }
  while (true) {
    try {
      const Outcome o = attempt();
      guard_.accepted(o.steps_done, o.gradient_norm, o.phase);
      snapshots_.accepted();
      if (o.steps_done % setup_.snapshot_every == 0) snapshots_.take(hooks_.state());
      return;
    } catch (const StepFault& e) {
      const FaultGuard::Record record = guard_.faulted(hooks_.steps_done() + 1, e.what(), setup_.who, setup_.advice);
      hooks_.load(snapshots_.rollback(), "(the last good state)");
      guard_.keep(record);
      hooks_.apply_step_scale();
      snapshots_.replace_latest(hooks_.state());
    }
  }
}

void GuardedRun::distribute(Collective& collective, std::vector<at::Tensor> starting) {
  collective_ = &collective;
  collective.broadcast(starting);
  if (setup_.guarded) snapshots_.reset(hooks_.state());
}

void GuardedRun::checkpoint(const std::string& path) {
  snapshots_.reset(hooks_.state());
  if (rank() == 0) writer_.write(path, setup_.kind, snapshots_.latest());
}

Archive GuardedRun::read(const std::string& path) const { return read_archive(path, setup_.kind); }

void GuardedRun::restore(const Archive& checkpoint, const std::string& path) {
  hooks_.load(checkpoint, path);
  snapshots_.reset(checkpoint);
}

}  // namespace autoreg::registration
