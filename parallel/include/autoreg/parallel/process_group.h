// registration::Collective on LibTorch's c10d: a TCPStore rendezvous (rank 0 serves it,
// or torchrun's agent does), and a Gloo process group for CPU tensors or, with --device
// cuda, each rank on GPU LOCAL_RANK (modulo the GPUs it sees) and an NCCL process group
// (from the CUDA plugin; Gloo, through the host, where the plugin has no NCCL or
// AUTOREG_COLLECTIVES=gloo). Gradients are
// packed into buckets of at most kBucketBytes per dtype and each bucket is summed with
// one allreduce, all buckets in flight at once (DDP's bucketing, without its hooks: a
// step's gradients are complete when it sums them, so there is nothing to overlap with).
//
// A failed collective (a peer killed: gloo's IoException; a hung peer: a timeout after
// `timeout`) throws; a failed group cannot be reused: the run ends and its launcher
// restarts it from the last checkpoint.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "autoreg/parallel/rendezvous.h"
#include "autoreg/registration/collective.h"

namespace autoreg::parallel {

inline constexpr size_t kBucketBytes = size_t(25) << 20;  // DDP's default bucket size

// Connects this process to the others of `r` (waits up to `rendezvous_timeout` for all
// of them) and returns the group. `device`: "cpu" or "cuda". Throws std::runtime_error naming the address and port when the
// rendezvous fails.
std::unique_ptr<registration::Collective> connect(const Rendezvous& r, const std::string& device,
                                                  std::chrono::milliseconds timeout,
                                                  std::chrono::milliseconds rendezvous_timeout);

}  // namespace autoreg::parallel
