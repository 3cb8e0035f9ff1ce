// The --nproc supervisor on small shell ranks that fail on purpose: each failure gets its
// class, its diagnosis line and its action (restart, or stop), a hung rank is found, and
// restarts stop at their limit or when the same class repeats.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "autoreg/parallel/supervisor.h"

namespace autoreg::parallel {
namespace {

namespace fs = std::filesystem;

class Supervisor : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-supervisor-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs `script` (sh) as `nproc` ranks; returns the exit code.
  int supervise_script(const std::string& script, int nproc, int max_restarts, int max_same = 3) {
    SupervisorOptions o;
    o.command = {"/bin/sh", "-c", script};
    o.nproc = nproc;
    o.max_restarts = max_restarts;
    o.max_same_failure = max_same;
    o.failures = failures();
    o.collective_timeout_s = 1;
    return supervise(o);
  }
  std::string failures() const { return (dir_ / "failures.jsonl").string(); }
  std::vector<nlohmann::json> lines() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(failures());
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  fs::path dir_;
};

// A first attempt's rank 1 fails so; the restart succeeds.
std::string first_attempt(const std::string& rank1_does) {
  return "echo 7 > /dev/null; if [ \"$RANK\" = 1 ] && [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then " + rank1_does +
         "; fi; exit 0";
}

TEST_F(Supervisor, AllRanksSucceedingIsSuccessWithTheLaunchersVariables) {
  const std::string script =
      "[ \"$WORLD_SIZE\" = 3 ] && [ \"$MASTER_ADDR\" = 127.0.0.1 ] && [ -n \"$MASTER_PORT\" ] && [ \"$LOCAL_RANK\" = \"$RANK\" ] "
      "&& [ \"$OMP_NUM_THREADS\" -ge 1 ] && [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]";
  EXPECT_EQ(supervise_script(script, 3, 0), 0);
  EXPECT_TRUE(lines().empty());
}

TEST_F(Supervisor, AKilledRankIsAWorkerLostAndTheRunRestarts) {
  EXPECT_EQ(supervise_script(first_attempt("kill -9 $$"), 2, 2), 0);
  const auto l = lines();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0]["class"], "worker_lost");
  EXPECT_EQ(l[0]["rank"], 1);
  EXPECT_NE(l[0]["evidence"].get<std::string>().find("SIGKILL"), std::string::npos) << l[0];
  EXPECT_EQ(l[0]["action"], "restart 1 of 2 from the last checkpoint");
  for (const char* key : {"time", "step"}) EXPECT_TRUE(l[0].contains(key)) << key;
}

TEST_F(Supervisor, AStoppedRankIsFoundHungWhenItsPeersTimeOut) {
  // Rank 0 times out waiting for rank 1, which has stopped itself.
  const std::string script =
      "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then if [ \"$RANK\" = 1 ]; then kill -STOP $$; fi; sleep 1; "
      "echo 'Timed out waiting 1000ms for recv operation to complete' >&2; exit 3; fi; exit 0";
  EXPECT_EQ(supervise_script(script, 2, 1), 0);
  const auto l = lines();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0]["class"], "collective_timeout");
  EXPECT_EQ(l[0]["rank"], 1);
  // Found stopped (and killed at once), after its peer's collective timed out.
  EXPECT_NE(l[0]["evidence"].get<std::string>().find("process state T: stopped"), std::string::npos) << l[0];
  EXPECT_NE(l[0]["evidence"].get<std::string>().find("its peers' collective timed out"), std::string::npos) << l[0];
}

TEST_F(Supervisor, FailuresARestartCannotHelpStopTheRunWithTheirCode) {
  // The rank's own report (as main writes it through parallel::report_failure).
  const auto report = [](const std::string& cls, int code) {
    return "echo '{\"class\":\"" + cls + "\",\"message\":\"m\",\"step\":4,\"exit_code\":" + std::to_string(code) +
           "}' > \"$AUTOREG_WORKER_STATUS.failure.json\"; exit " + std::to_string(code);
  };
  for (const auto& [cls, code] : std::vector<std::pair<std::string, int>>{
           {"programming_error", 3}, {"disk_full", 3}, {"bad_input", 2}, {"non_finite", 3}}) {
    fs::remove(failures());
    EXPECT_EQ(supervise_script(first_attempt(report(cls, code)), 2, 5), code) << cls;
    const auto l = lines();
    ASSERT_EQ(l.size(), 1u) << cls;
    EXPECT_EQ(l[0]["class"], cls);
    EXPECT_EQ(l[0]["rank"], 1);
    EXPECT_EQ(l[0]["step"], 4);
    EXPECT_EQ(l[0]["action"], "stop: a restart would fail the same way");
  }
}

TEST_F(Supervisor, OutOfMemoryRestartsAndTheSameClassInARowStops) {
  // Every attempt runs out of memory: stopped after 2 in a row although 5 restarts are allowed.
  EXPECT_EQ(supervise_script("[ \"$RANK\" = 0 ] && echo 'autoreg train: std::bad_alloc' >&2 && exit 3; exit 0", 2, 5, 2), 3);
  const auto l = lines();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0]["class"], "out_of_memory");
  EXPECT_EQ(l[0]["rank"], 0);
  EXPECT_EQ(l[0]["action"], "restart 1 of 5 from the last checkpoint");
  EXPECT_EQ(l[1]["action"], "stop: out_of_memory 2 times in a row");
}

TEST_F(Supervisor, RestartsStopAtTheirLimit) {
  EXPECT_EQ(supervise_script("exit 3", 1, 1), 3);
  const auto l = lines();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0]["class"], "failure");
  EXPECT_EQ(l[0]["action"], "restart 1 of 1 from the last checkpoint");
  EXPECT_EQ(l[1]["action"], "stop: all 1 restarts used");
}

}  // namespace
}  // namespace autoreg::parallel
