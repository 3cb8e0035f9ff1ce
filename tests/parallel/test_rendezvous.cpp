// The rendezvous read from launchers' environments, and the failure classes read from
// exceptions and messages.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include <new>
#include <stdexcept>
#include <system_error>

#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/rendezvous.h"

namespace autoreg::parallel {
namespace {

using Env = std::map<std::string, std::string>;

TEST(Rendezvous, TorchrunsVariablesNameTheRankAndTheStore) {
  const Env env = {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node7"},
                   {"MASTER_PORT", "29400"}, {"TORCHELASTIC_RUN_ID", "x"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                   {"TORCHELASTIC_RESTART_COUNT", "2"}};
  const auto r = rendezvous_from_environment(&env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->world, 8);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->master_addr, "node7");
  EXPECT_EQ(r->master_port, 29400);
  EXPECT_TRUE(r->agent_store);
  EXPECT_EQ(r->restart_count, 2);
  EXPECT_EQ(r->source, "torchrun");
}

TEST(Rendezvous, SlurmIsTheFallbackAndNeedsTheMastersAddress) {
  Env env = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}, {"MASTER_ADDR", "n01"}};
  const auto r = rendezvous_from_environment(&env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rank, 5);
  EXPECT_EQ(r->world, 16);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->master_port, 29500);
  EXPECT_EQ(r->source, "slurm");
  EXPECT_FALSE(r->agent_store);
  env.erase("MASTER_ADDR");
  EXPECT_THROW(rendezvous_from_environment(&env), std::invalid_argument);
  // RANK wins over Slurm's variables (torchrun inside an allocation).
  env = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}};
  EXPECT_EQ(rendezvous_from_environment(&env)->world, 2);
}

TEST(Rendezvous, OneProcessIsNoRendezvousAndBadValuesAreRefused) {
  const Env none, single = {{"RANK", "0"}, {"WORLD_SIZE", "1"}}, one_task = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}};
  EXPECT_FALSE(rendezvous_from_environment(&none));
  EXPECT_FALSE(rendezvous_from_environment(&single));
  EXPECT_FALSE(rendezvous_from_environment(&one_task));
  for (const Env& bad : {Env{{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}},
                         Env{{"RANK", "0"}, {"WORLD_SIZE", "two"}, {"MASTER_ADDR", "h"}},
                         Env{{"RANK", "1"}}, Env{{"WORLD_SIZE", "4"}},
                         Env{{"RANK", "1"}, {"WORLD_SIZE", "2"}},
                         Env{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}}) {
    EXPECT_THROW(rendezvous_from_environment(&bad), std::invalid_argument);
  }
}

TEST(Failure, ExceptionsAndMessagesAreClassified) {
  EXPECT_EQ(classify_exception(std::bad_alloc(), 3), "out_of_memory");
  EXPECT_EQ(classify_exception(std::system_error(ENOSPC, std::generic_category(), "x.ckpt"), 3), "disk_full");
  EXPECT_EQ(classify_exception(std::logic_error("an invariant"), 3), "programming_error");
  EXPECT_EQ(classify_exception(std::runtime_error("m.nii.gz: truncated"), 2), "bad_input");
  EXPECT_EQ(classify_exception(std::runtime_error("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4242"), 3),
            "worker_lost");
  EXPECT_EQ(classify_exception(std::runtime_error("[gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 2000ms for recv operation to complete"), 3),
            "collective_timeout");
  EXPECT_EQ(classify_exception(std::runtime_error("training stopped: 6 faulty steps in a row (non-finite training loss at step 4)"), 3),
            "non_finite");
  EXPECT_EQ(classify_exception(std::runtime_error("something else"), 3), "failure");
  EXPECT_TRUE(restartable("worker_lost"));
  EXPECT_TRUE(restartable("out_of_memory"));
  EXPECT_TRUE(restartable("collective_timeout"));
  EXPECT_TRUE(restartable("failure"));
  for (const char* c : {"disk_full", "bad_input", "programming_error", "non_finite"}) EXPECT_FALSE(restartable(c)) << c;
}

}  // namespace
}  // namespace autoreg::parallel
