// The divergence guard that training and the search share: what is a fault, what a fault
// does to the step sizes and counts, when it gives up, its checkpoint fields, and the
// snapshots a fault rolls back to; the run skeleton built on them (guarded_run.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "autoreg/registration/fault_guard.h"
#include "autoreg/registration/guarded_run.h"

namespace autoreg::registration {
namespace {

bool faults(const FaultGuard& g, double norm, const std::string& phase = "") {
  try {
    g.check(norm, phase);
    return false;
  } catch (const StepFault&) {
    return true;
  }
}

TEST(FaultGuard, ASpikeIsAFaultOnlyAfterEnoughStepsOfItsPhase) {
  FaultGuard g(20, 5);
  EXPECT_TRUE(faults(g, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(faults(g, std::numeric_limits<double>::infinity()));
  for (int s = 1; s < FaultGuard::kSpikeSamples; ++s) {
    g.accepted(s, 1.0, "warmup");
    EXPECT_FALSE(faults(g, 1000, "warmup")) << "after " << s << " steps";
  }
  g.accepted(FaultGuard::kSpikeSamples, 1.0, "warmup");
  EXPECT_DOUBLE_EQ(g.gradient_average(), 1.0);
  EXPECT_FALSE(faults(g, 19.9, "warmup"));
  EXPECT_TRUE(faults(g, 20.1, "warmup"));
  // A new phase starts its own average: no spike is judged on the old one.
  EXPECT_FALSE(faults(g, 1000, "search"));
  g.accepted(11, 50.0, "search");
  EXPECT_DOUBLE_EQ(g.gradient_average(), 50.0);
  // Off: only non-finite norms.
  FaultGuard off(0, 5);
  for (int s = 1; s <= 20; ++s) off.accepted(s, 1.0);
  EXPECT_FALSE(faults(off, 1e9));
  EXPECT_TRUE(faults(off, std::nan("")));
}

TEST(FaultGuard, FaultsHalveTheStepSizeAndTooManyInARowStopTheRun) {
  FaultGuard g(20, 2);
  g.keep(g.faulted(5, "why", "training", "try a lower --lr"));
  EXPECT_DOUBLE_EQ(g.lr_scale(), 0.5);
  g.keep(g.faulted(5, "why", "training", "try a lower --lr"));
  EXPECT_DOUBLE_EQ(g.lr_scale(), 0.25);
  EXPECT_EQ(g.rollbacks(), 2);
  try {
    g.faulted(5, "gradient norm 900", "training", "try a lower --lr");
    FAIL() << "a third fault in a row with max_rollbacks 2";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "training stopped: 3 faulty steps in a row (gradient norm 900 at step 5), even at smaller step sizes; "
              "try a lower --lr");
  }
  // A good step past the faulty one ends the run of faults; the total and the scale stay.
  g.accepted(5, 1.0);
  g.accepted(6, 1.0);
  g.keep(g.faulted(9, "why", "training", ""));
  g.keep(g.faulted(9, "why", "training", ""));
  EXPECT_EQ(g.rollbacks(), 4);
  EXPECT_DOUBLE_EQ(g.lr_scale(), 0.0625);
}

TEST(FaultGuard, ItsFieldsRoundTripAndOldCheckpointsReadAsAFreshGuard) {
  FaultGuard g(20, 5);
  for (int s = 1; s <= 12; ++s) g.accepted(s, 0.1 * s, "search");
  g.keep(g.faulted(13, "why", "the search", ""));
  Archive a;
  g.save(a, "guard.");
  FaultGuard back(20, 5);
  back.load(a, "x.ckpt", "guard.");
  EXPECT_EQ(back.gradient_average(), g.gradient_average());
  EXPECT_EQ(back.lr_scale(), 0.5);
  EXPECT_EQ(back.rollbacks(), 1);
  EXPECT_EQ(faults(back, 100, "search"), faults(g, 100, "search"));
  EXPECT_EQ(faults(back, 100, "search"), true);

  FaultGuard fresh(20, 5);
  fresh.load(Archive{}, "old.ckpt", "guard.");
  EXPECT_EQ(fresh.lr_scale(), 1);
  EXPECT_EQ(fresh.rollbacks(), 0);

  for (auto& [key, value] : a.fields) {
    if (key == "guard.lr_scale") value = "half";
  }
  try {
    back.load(a, "x.ckpt", "guard.");
    FAIL();
  } catch (const ModelFileError& e) {
    EXPECT_EQ(std::string(e.what()), "x.ckpt: malformed field guard.lr_scale 'half'");
  }
}


Archive state_at(int step) {
  Archive a;
  a.fields.emplace_back("step", std::to_string(step));
  return a;
}

std::string step_of(const Archive& a) { return a.field("step", "test"); }

// A fault rolls back to the latest snapshot; when the first step from there faults too,
// to the one before it (once: then the latest again); never past a checkpoint.
TEST(Snapshots, AStateWhoseNextStepFaultsGivesWayToTheOneBefore) {
  Snapshots s;
  s.reset(state_at(0));
  s.accepted();
  s.take(state_at(10));
  s.accepted();
  s.take(state_at(20));
  s.accepted();                          // step 21 accepted, step 22 faults:
  EXPECT_EQ(step_of(s.rollback()), "20");  // back to the latest
  s.replace_latest(state_at(20));
  EXPECT_EQ(step_of(s.rollback()), "10");  // step 21 faults again from there: one further
  EXPECT_EQ(step_of(s.rollback()), "10");  // and no further than that
  s.accepted();
  s.take(state_at(20));
  s.reset(state_at(25));                 // a checkpoint: nothing before it
  EXPECT_EQ(step_of(s.rollback()), "25");
  EXPECT_EQ(step_of(s.rollback()), "25");
  EXPECT_EQ(step_of(s.latest()), "25");
}

// The run skeleton on a toy run whose state is one number and a step count.
struct ToyRun {
  double value = 0, scale_seen = 1;
  int64_t steps = 0;
  GuardedRun run;
  explicit ToyRun(bool guarded, int64_t max_rollbacks = 2)
      : run({20, max_rollbacks, 2, false, guarded, "the toy", "try less", "TOY"},
            {[this] {
               Archive a;
               a.fields.emplace_back("value", std::to_string(value));
               a.fields.emplace_back("steps", std::to_string(steps));
               run.guard().save(a, "guard.");
               return a;
             },
             [this](const Archive& a, const std::string& path) {
               value = std::stod(a.field("value", path));
               steps = std::stoll(a.field("steps", path));
               run.guard().load(a, path, "guard.");
             },
             [this] { scale_seen = run.guard().lr_scale(); }, [this] { return steps; }}) {
    run.start();
  }
  // One step: value += 1; `fault`: the state is corrupted, then the step faults.
  void step(bool fault) {
    run.step([&] {
      if (fault) {
        value = std::nan("");
        throw StepFault("non-finite");
      }
      value += 1;
      return GuardedRun::Outcome{++steps, 1.0, ""};
    });
  }
};

TEST(GuardedRun, AFaultyStepIsRolledBackAtHalfTheStepSizeAndTheRunGoesOn) {
  ToyRun toy(true);
  toy.step(false);
  toy.step(false);  // a good state at 2 steps (snapshot_every 2)
  toy.step(false);
  int faults = 0;
  toy.run.step([&] {
    if (faults++ == 0) {
      toy.value = 1e9;
      throw StepFault("spike");
    }
    toy.value += 1;
    return GuardedRun::Outcome{++toy.steps, 1.0, ""};
  });
  // Back to the state at 2 steps, then the step again.
  EXPECT_EQ(toy.steps, 3);
  EXPECT_DOUBLE_EQ(toy.value, 3);
  EXPECT_DOUBLE_EQ(toy.scale_seen, 0.5);
  EXPECT_EQ(toy.run.guard().rollbacks(), 1);
}

TEST(GuardedRun, TooManyFaultsInARowStopTheRunNamingIt) {
  ToyRun toy(true, 2);
  toy.step(false);
  try {
    toy.step(true);
    FAIL() << "expected the run to stop";
  } catch (const StepFault&) {
    FAIL() << "a fault escaped the guard";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the toy stopped: 3 faulty steps in a row"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("try less"), std::string::npos) << e.what();
  }
}

TEST(GuardedRun, UnguardedAFaultStopsTheRunAtOnce) {
  ToyRun toy(false);
  toy.step(false);
  EXPECT_THROW(toy.step(true), StepFault);
  EXPECT_EQ(toy.run.guard().rollbacks(), 0);
}

}  // namespace
}  // namespace autoreg::registration
