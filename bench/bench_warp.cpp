// Google Benchmark: autoreg's warp and integrate against torch's grid_sample doing the
// same work (the field converted to grid_sample's normalised grid inside the timed
// region), plus a large tensor copy that measures the memory bandwidth the
// "memory-traffic floor" figures are relative to. CPU always; CUDA when a device is
// present. Each benchmark reports `bytes`, the bytes that must move at least once
// (inputs read, outputs written), so bench/summarize.py can relate times to the floor.
//
//   build/bin/autoreg_bench [--threads N] [google benchmark flags]
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "autoreg/ops.h"
#include "bench_common.h"
#include "ops/helpers.h"  // tests/: the field → grid_sample grid conversion

namespace {

using autoreg::ops::Interpolation;
using autoreg::ops::Padding;

struct Size {
  const char* tag;
  int64_t C, D, H, W;
  int64_t voxels() const { return D * H * W; }
};
constexpr Size kSizes[] = {{"160", 1, 160, 192, 224}, {"80", 16, 80, 96, 112}};

using autoreg::bench::sync;

at::Tensor grid_sample(const at::Tensor& image, const at::Tensor& disp, Padding padding) {
  return autoreg::test::grid_sample_warp(image, disp, Interpolation::Linear, padding);
}

struct Inputs {
  at::Tensor image, disp, grad;
};

Inputs make_inputs(const Size& s, const at::Device& device) {
  at::manual_seed(0);
  const auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
  // A smooth field of a few voxels, as a registration produces.
  const at::Tensor coarse = (at::rand({1, 3, 6, 6, 6}, opts) * 2 - 1) * 4;
  return {at::rand({1, s.C, s.D, s.H, s.W}, opts),
          at::upsample_trilinear3d(coarse, {s.D, s.H, s.W}, true).contiguous(),
          at::randn({1, s.C, s.D, s.H, s.W}, opts)};
}

using Forward = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

void run_forward(benchmark::State& state, const Size& s, const at::Device& device, Forward f) {
  const Inputs in = make_inputs(s, device);
  c10::AutoGradMode no_grad(false);
  f(in.image, in.disp);  // warm-up: first-touch page faults are not the kernel's time
  for (auto _ : state) {
    at::Tensor out = f(in.image, in.disp);
    sync(device);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.counters["bytes"] = double((3 + 2 * s.C) * 4 * s.voxels());
}

void run_forward_backward(benchmark::State& state, const Size& s, const at::Device& device,
                          Forward f) {
  Inputs in = make_inputs(s, device);
  in.image.requires_grad_();
  in.disp.requires_grad_();
  torch::autograd::grad({f(in.image, in.disp)}, {in.image, in.disp}, {in.grad});  // warm-up
  for (auto _ : state) {
    const at::Tensor out = f(in.image, in.disp);
    const auto grads = torch::autograd::grad({out}, {in.image, in.disp}, {in.grad});
    sync(device);
    benchmark::DoNotOptimize(grads[1].data_ptr());
  }
  // forward: field and image in, output out; backward: incoming gradient, image and
  // field in, both gradients out.
  state.counters["bytes"] = double((3 + 2 * s.C + 3 * s.C + 6) * 4 * s.voxels());
}

// Scaling and squaring of a 3×80×96×112 field, 7 steps, both ways.
void run_integrate(benchmark::State& state, const at::Device& device, bool with_grid_sample) {
  const Size s{"80", 3, 80, 96, 112};
  const at::Tensor v = make_inputs(s, device).disp;
  c10::AutoGradMode no_grad(false);
  constexpr int kSteps = 7;
  autoreg::ops::integrate(v, kSteps);  // warm-up
  for (auto _ : state) {
    at::Tensor u;
    if (with_grid_sample) {
      u = v * (1.0 / (1 << kSteps));
      for (int i = 0; i < kSteps; ++i) u = u + grid_sample(u, u, Padding::Border);
    } else {
      u = autoreg::ops::integrate(v, kSteps);
    }
    sync(device);
    benchmark::DoNotOptimize(u.data_ptr());
  }
  // the scaling reads v and writes u; each step reads u and writes the next.
  state.counters["bytes"] = double((kSteps + 1) * 2 * 3 * 4 * s.voxels());
}

// The bandwidth the floor figures refer to: a 256 MiB copy, split over the threads on
// the CPU (memcpy of each part: the best a copy does here; at::copy_ is slower) and
// a device-to-device tensor copy on CUDA.
void run_copy(benchmark::State& state, const at::Device& device) {
  const at::Tensor src = at::rand({64 * 1024 * 1024}, at::TensorOptions().device(device));
  at::Tensor dst = at::empty_like(src);
  const int64_t n = src.numel();
  dst.copy_(src);  // warm-up: touch every page of dst
  for (auto _ : state) {
    if (device.is_cuda()) {
      dst.copy_(src);
    } else {
      const float* s = src.data_ptr<float>();
      float* d = dst.data_ptr<float>();
      at::parallel_for(0, n, n / at::get_num_threads() + 1, [&](int64_t b, int64_t e) {
        std::memcpy(d + b, s + b, size_t(e - b) * sizeof(float));
      });
    }
    sync(device);
  }
  state.counters["bytes"] = double(2 * src.nbytes());  // read + write
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * int64_t(src.nbytes()));
}

void register_all(const at::Device& device) {
  const std::string dev = device.is_cuda() ? "cuda" : "cpu";
  auto reg = [&](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  reg("copy_bandwidth/" + dev, [device](benchmark::State& st) { run_copy(st, device); });
  for (const Size& s : kSizes) {
    const std::string tail = "/" + dev + "/" + s.tag;
    const Forward warp = [](const at::Tensor& i, const at::Tensor& d) {
      return autoreg::ops::warp(i, d, Interpolation::Linear, Padding::Zeros);
    };
    const Forward gs = [](const at::Tensor& i, const at::Tensor& d) { return grid_sample(i, d, Padding::Zeros); };
    reg("warp_fwd" + tail, [=](benchmark::State& st) { run_forward(st, s, device, warp); });
    reg("grid_sample_fwd" + tail, [=](benchmark::State& st) { run_forward(st, s, device, gs); });
    reg("warp_fwd_bwd" + tail, [=](benchmark::State& st) { run_forward_backward(st, s, device, warp); });
    reg("grid_sample_fwd_bwd" + tail,
        [=](benchmark::State& st) { run_forward_backward(st, s, device, gs); });
  }
  reg("integrate7/" + dev + "/80", [device](benchmark::State& st) { run_integrate(st, device, false); });
  reg("grid_sample_integrate7/" + dev + "/80",
      [device](benchmark::State& st) { run_integrate(st, device, true); });
}

}  // namespace

void register_network_benchmarks(const at::Device& device);  // bench_network.cpp
void register_search_benchmarks();                            // bench_search.cpp

int main(int argc, char** argv) {
  int threads = 2;
  if (const char* t = std::getenv("AUTOREG_BENCH_THREADS")) threads = std::atoi(t);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
  }
  // Memory settings, applied before the first tensor exists and to every benchmark
  // alike (grid_sample too):
  //  * keep freed memory in the process: otherwise large tensors are mapped and
  //    unmapped on every operation (see docs/design.md, "Performance notes"); AUTOREG_MALLOPT=0 measures glibc's
  //    defaults;
  //  * transparent huge pages for tensors (torch's THP_MEM_ALLOC_ENABLE): on the
  //    2-core VM heap memory without them copies at a third of the speed (TLB misses
  //    under nested paging). Set THP_MEM_ALLOC_ENABLE=0 to measure without.
  const char* mallopt_env = std::getenv("AUTOREG_MALLOPT");
  const bool keep_memory = !(mallopt_env && std::string(mallopt_env) == "0");
  if (keep_memory) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  setenv("THP_MEM_ALLOC_ENABLE", "1", /*overwrite=*/0);
  at::set_num_threads(threads);
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("keep_freed_memory", keep_memory ? "yes" : "no");
  benchmark::AddCustomContext("thp", std::getenv("THP_MEM_ALLOC_ENABLE"));
  register_all(at::Device(at::kCPU));
  register_network_benchmarks(at::Device(at::kCPU));
  // The search's step costs take minutes: only when asked for by name
  // (bench/search_cost.py passes --benchmark_filter=^search_cost/...).
  for (int i = 1; i < argc; ++i) {
    if (std::strstr(argv[i], "--benchmark_filter=") == argv[i] && std::strstr(argv[i], "search_cost")) {
      register_search_benchmarks();
      break;
    }
  }
  if (autoreg::ops::cuda_available()) {
    register_all(at::Device(at::kCUDA));
    register_network_benchmarks(at::Device(at::kCUDA));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
