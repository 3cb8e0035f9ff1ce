// The c10d-backed collective on Gloo over loopback: two ranks (threads of this process,
// each with its own process group) sum, broadcast and agree, across buckets and dtypes.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <thread>

#include "autoreg/ops.h"
#include "autoreg/parallel/process_group.h"
#include "autoreg/parallel/rendezvous.h"

namespace autoreg::parallel {
namespace {

// Runs body(rank, collective) on `world` ranks at once.
template <typename Body>
void on_ranks(int world, Body body) {
  const int port = free_local_port();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(world));
  for (int k = 0; k < world; ++k) {
    threads.emplace_back([&, k] {
      try {
        Rendezvous r;
        r.rank = k;
        r.world = world;
        r.master_port = port;
        auto c = connect(r, "cpu", std::chrono::seconds(30), std::chrono::seconds(30));
        body(k, *c);
      } catch (const std::exception& e) {
        errors[size_t(k)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int k = 0; k < world; ++k) EXPECT_EQ(errors[size_t(k)], "") << "rank " << k;
}

TEST(Collective, SumsAcrossBucketsAndDtypesInPlace) {
  on_ranks(2, [](int rank, registration::Collective& c) {
    EXPECT_EQ(c.rank(), rank);
    EXPECT_EQ(c.world(), 2);
    // 8 M floats (32 MB) do not fit one 25 MB bucket with the rest; a double and an
    // int tensor make buckets of their own.
    std::vector<at::Tensor> t = {at::full({2, 3}, 1.0f + rank), at::arange(8 << 20, at::kFloat) * (rank + 1),
                                 at::full({4}, 0.5 * rank, at::kDouble), at::full({2, 2}, 3 + rank, at::kLong),
                                 at::full({5}, 2.0f * rank)};
    const at::Tensor big = t[1];
    c.sum(t);
    EXPECT_TRUE(at::equal(t[0], at::full({2, 3}, 3.0f)));
    EXPECT_TRUE(at::equal(t[1], at::arange(8 << 20, at::kFloat) * 3));
    EXPECT_TRUE(t[1].is_same(big));  // in place
    EXPECT_TRUE(at::equal(t[2], at::full({4}, 0.5, at::kDouble)));
    EXPECT_TRUE(at::equal(t[3], at::full({2, 2}, 7, at::kLong)));
    EXPECT_TRUE(at::equal(t[4], at::full({5}, 2.0f)));
  });
}

TEST(Collective, BroadcastsRankZerosTensorsAndAgreesOnAStop) {
  on_ranks(3, [](int rank, registration::Collective& c) {
    std::vector<at::Tensor> t = {at::full({3}, float(rank)), at::full({2, 2}, double(rank) + 0.5, at::kDouble)};
    c.broadcast(t);
    EXPECT_TRUE(at::equal(t[0], at::zeros({3})));
    EXPECT_TRUE(at::equal(t[1], at::full({2, 2}, 0.5, at::kDouble)));
    EXPECT_FALSE(c.any(false));
    EXPECT_TRUE(c.any(rank == 2));
    c.barrier();
  });
}

// On a GPU: the plugin's NCCL group (one rank: NCCL refuses two ranks on one GPU, and
// the device machine has one) sums, broadcasts and agrees on device tensors.
TEST(Collective, NcclSumsDeviceTensorsOnAGpu) {
  if (!ops::cuda_available()) GTEST_SKIP() << ops::cuda_unavailable_reason();
  Rendezvous r;
  r.master_port = free_local_port();
  auto c = connect(r, "cuda", std::chrono::seconds(30), std::chrono::seconds(30));
  std::vector<at::Tensor> t = {at::full({3}, 2.0f, at::kCUDA), at::full({2}, 0.5, at::TensorOptions().dtype(at::kDouble).device(at::kCUDA))};
  c->sum(t);
  EXPECT_TRUE(at::equal(t[0].cpu(), at::full({3}, 2.0f)));
  EXPECT_TRUE(at::equal(t[1].cpu(), at::full({2}, 0.5, at::kDouble)));
  c->broadcast(t);
  EXPECT_TRUE(c->any(true));
  EXPECT_FALSE(c->any(false));
}

}  // namespace
}  // namespace autoreg::parallel
