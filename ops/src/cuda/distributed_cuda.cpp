// What data-parallel runs on GPUs need of LibTorch's CUDA backend (parallel/
// process_group.h): each rank's GPU, and NCCL process groups. They live here, in the CUDA
// plugin, because ProcessGroupNCCL and the CUDA runtime are in libtorch_cuda, which only
// the plugin links; parallel/ looks these two functions up by name once ops::
// cuda_available() has loaded the plugin (RTLD_GLOBAL), so that CPU builds and runs never
// load CUDA.
#include <c10/cuda/CUDAFunctions.h>

#include <chrono>
#include <cstdint>

#ifdef AUTOREG_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

// This rank's GPU: local_rank modulo the devices this process sees. Returns its index.
extern "C" __attribute__((visibility("default"))) int autoreg_use_rank_device(int local_rank) {
  const int count = int(c10::cuda::device_count());
  const int device = count > 0 ? local_rank % count : 0;
  c10::cuda::set_device(c10::DeviceIndex(device));
  return device;
}

// A new NCCL process group (owned by the caller: c10::intrusive_ptr<Backend>::reclaim),
// or nullptr where this plugin was built without NCCL's header. `store` stays the caller's.
extern "C" __attribute__((visibility("default"))) c10d::Backend* autoreg_make_nccl_backend(c10d::Store* store, int rank,
                                                                                        int size, int64_t timeout_ms) {
#ifdef AUTOREG_WITH_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = std::chrono::milliseconds(timeout_ms);
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
      c10::intrusive_ptr<c10d::Store>::unsafe_reclaim_from_nonowning(store), rank, size, options);
  return group.release();
#else
  (void)store, (void)rank, (void)size, (void)timeout_ms;
  return nullptr;
#endif
}
