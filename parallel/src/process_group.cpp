#include "autoreg/parallel/process_group.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <utility>

#include "autoreg/base/names.h"
#include "autoreg/ops.h"

namespace autoreg::parallel {
namespace {

bool loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1"; }

// The plugin's functions (ops/src/cuda/distributed_cuda.cpp), once it is loaded.
template <typename F>
F* plugin_function(const char* name) {
  return reinterpret_cast<F*>(::dlsym(RTLD_DEFAULT, name));
}

class BackendCollective : public registration::Collective {
 public:
  BackendCollective(const Rendezvous& r, const std::string& device, std::chrono::milliseconds timeout,
                    std::chrono::milliseconds rendezvous_timeout)
      : rank_(r.rank), world_(r.world) {
    c10d::TCPStoreOptions store_options;
    store_options.port = uint16_t(r.master_port);
    store_options.isServer = r.rank == 0 && !r.agent_store;
    store_options.numWorkers = r.agent_store ? std::nullopt : std::optional<size_t>(size_t(r.world));
    store_options.waitWorkers = !r.agent_store;
    store_options.timeout = rendezvous_timeout;
    const std::string where = r.master_addr + ":" + std::to_string(r.master_port);
    c10::intrusive_ptr<c10d::Store> store;
    try {
      store = c10::make_intrusive<c10d::TCPStore>(r.master_addr, store_options);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw std::runtime_error("rank " + std::to_string(r.rank) + " of " + std::to_string(r.world) +
                               ": no rendezvous at " + where + " (" + what.substr(0, what.find('\n')) + ")");
    }
    // Each restart of the run is a new group on the (possibly long-lived) agent store.
    store = c10::make_intrusive<c10d::PrefixStore>("autoreg/attempt_" + std::to_string(r.restart_count), store);
    if (device == "cuda") {
      // Each rank on its own GPU (LOCAL_RANK among the devices it sees), NCCL between them
      // where the plugin has it (AUTOREG_COLLECTIVES=gloo keeps Gloo).
      if (!ops::cuda_available()) throw std::runtime_error("--device cuda: " + ops::cuda_unavailable_reason());
      if (auto* use_device = plugin_function<int(int)>("autoreg_use_rank_device")) use_device(r.local_rank);
      const char* forced = std::getenv("AUTOREG_COLLECTIVES");
      auto* make = plugin_function<c10d::Backend*(c10d::Store*, int, int, int64_t)>("autoreg_make_nccl_backend");
      if (make && !(forced && std::string(forced) == "gloo")) {
        if (c10d::Backend* nccl = make(store.get(), r.rank, r.world, int64_t(timeout.count()))) {
          group_ = c10::intrusive_ptr<c10d::Backend>::reclaim(nccl);
          backend_ = "nccl";
          tensor_device_ = at::Device(at::kCUDA);  // NCCL sums device tensors only
          return;
        }
      }
      if (r.rank == 0) std::fprintf(stderr, "note: no NCCL in this build's CUDA plugin: the ranks sum through Gloo\n");
    }
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    if (interface && *interface) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else if (loopback(r.master_addr)) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    options->threads = 2;
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, r.rank, r.world, options);
  }

  int rank() const override { return rank_; }
  const std::string& backend() const { return backend_; }
  int world() const override { return world_; }

  void sum(std::vector<at::Tensor>& tensors) override {
    run(tensors, [&](std::vector<at::Tensor>& one) { return group_->allreduce(one); });
  }

  void broadcast(std::vector<at::Tensor>& tensors) override {
    run(tensors, [&](std::vector<at::Tensor>& one) { return group_->broadcast(one); });
  }

  bool any(bool mine) override {
    std::vector<at::Tensor> one{at::full({1}, mine ? 1 : 0, at::TensorOptions().dtype(at::kInt).device(tensor_device_))};
    group_->allreduce(one)->wait();
    return one[0].item<int>() > 0;
  }

  // Waits as long as rank 0's preprocessing may take, not just a collective's timeout.
  void barrier() override {
    c10d::BarrierOptions options;
    options.timeout = std::chrono::hours(2);
    group_->barrier(options)->wait();
  }

 private:
  // Packs consecutive tensors of one dtype and device into buckets of up to kBucketBytes,
  // starts `collective` on every bucket, waits for all, and unpacks.
  template <typename Collective>
  void run(std::vector<at::Tensor>& tensors, Collective collective) {
    std::vector<std::vector<size_t>> members;
    size_t bytes = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const at::Tensor& t = tensors[i];
      const size_t size = size_t(t.numel()) * t.element_size();
      const at::Tensor* first = members.empty() ? nullptr : &tensors[members.back().front()];
      if (!first || bytes + size > kBucketBytes || first->scalar_type() != t.scalar_type() ||
          first->device() != t.device()) {
        members.emplace_back();
        bytes = 0;
      }
      members.back().push_back(i);
      bytes += size;
    }
    std::vector<at::Tensor> flats;
    std::vector<c10::intrusive_ptr<c10d::Work>> work;
    for (const auto& bucket : members) {
      std::vector<at::Tensor> parts;
      for (size_t i : bucket) parts.push_back(tensors[i].reshape({-1}));
      // On the backend's device: NCCL sums device tensors only (a CPU flag, such as the
      // loops' stop and time-up, goes there and back).
      std::vector<at::Tensor> one{at::cat(parts).to(tensor_device_)};
      work.push_back(collective(one));
      flats.push_back(one[0]);
    }
    for (auto& w : work) w->wait();
    for (size_t b = 0; b < members.size(); ++b) {
      int64_t offset = 0;
      for (size_t i : members[b]) {
        at::Tensor& t = tensors[i];
        t.copy_(flats[b].narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
      }
    }
  }

  int rank_, world_;
  std::string backend_ = "gloo";
  at::Device tensor_device_ = at::kCPU;
  c10::intrusive_ptr<c10d::Backend> group_;
};

}  // namespace

std::unique_ptr<registration::Collective> connect(const Rendezvous& r, const std::string& device,
                                                  std::chrono::milliseconds timeout,
                                                  std::chrono::milliseconds rendezvous_timeout) {
  base::kDeviceNames.parse(device);  // std::invalid_argument for a name that is neither
  return std::make_unique<BackendCollective>(r, device, timeout, rendezvous_timeout);
}

}  // namespace autoreg::parallel
