// Google Benchmark: the registration networks' forward pass on a 1×1×160×192×224 pair
// (the AutoReg network with the default genotype against the VoxelMorph-style U-Net),
// and the cost of every candidate operation on every edge of the AutoReg network at
// that size (the table the search uses: oneDNN's speed is not proportional to FLOPs).
// Each benchmark reports `peak_rss_mib`, the process's peak resident memory when it ends:
// the network's peak when run alone (bench/network_e2e.py runs each in its own process).
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <sys/resource.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "autoreg/registration/genotype.h"
#include "autoreg/registration/network.h"
#include "autoreg/registration/operations.h"
#include "bench_common.h"

namespace {

using namespace autoreg::registration;

double peak_rss_mib() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

using autoreg::bench::sync;

void run_forward(benchmark::State& st, const NetworkSpec& spec, const at::Device& device) {
  c10::AutoGradMode no_grad(false);
  at::manual_seed(0);
  auto net = make_network(spec);
  net->to(device);
  net->eval();
  const at::Tensor moving = at::rand({1, 1, 160, 192, 224}, device), fixed = at::rand({1, 1, 160, 192, 224}, device);
  for (auto _ : st) {
    at::Tensor u = net->forward(moving, fixed);
    sync(device);
    benchmark::DoNotOptimize(u.data_ptr());
  }
  int64_t params = 0;
  for (const auto& p : net->parameters()) params += p.numel();
  st.counters["parameters"] = double(params);
  st.counters["peak_rss_mib"] = peak_rss_mib();
}

// One edge of the AutoReg network at 160×192×224: its input (batch 2 in the Siamese
// feature cell), channels and stride.
struct Edge {
  const char* name;
  int64_t batch, in, out, stride, d, h, w;
};
constexpr Edge kEdges[] = {
    {"F0", 2, 1, 16, 2, 160, 192, 224},  {"F1", 2, 16, 16, 1, 80, 96, 112}, {"F2", 2, 16, 16, 1, 80, 96, 112},
    {"F3", 2, 16, 32, 2, 80, 96, 112},   {"F4", 2, 32, 32, 1, 40, 48, 56},  {"F5", 2, 32, 32, 1, 40, 48, 56},
    {"D4_0", 1, 65, 48, 1, 40, 48, 56},  {"D4_1", 1, 48, 32, 1, 40, 48, 56}, {"D4_2", 1, 32, 16, 1, 40, 48, 56},
    {"D2_0", 1, 52, 48, 1, 80, 96, 112}, {"D2_1", 1, 48, 32, 1, 80, 96, 112}, {"D2_2", 1, 32, 16, 1, 80, 96, 112}};

void run_edge(benchmark::State& st, const Edge& e, const std::string& op, const at::Device& device) {
  c10::AutoGradMode no_grad(false);
  auto edge = make_edge(op, e.in, e.out, e.stride);
  edge->to(device);
  const at::Tensor x = at::rand({e.batch, e.in, e.d, e.h, e.w}, device);
  for (auto _ : st) {
    at::Tensor y = edge->forward(x);
    sync(device);
    benchmark::DoNotOptimize(y.data_ptr());
  }
}

}  // namespace

void register_network_benchmarks(const at::Device& device) {
  const std::string dev = device.is_cuda() ? "cuda" : "cpu";
  std::vector<std::pair<std::string, NetworkSpec>> networks = {{"autoreg", NetworkSpec{}}, {"unet", NetworkSpec{}}};
  networks[1].second.kind = "unet";
  // More AutoReg genotypes (a search's, a random one): AUTOREG_BENCH_GENOTYPES="name=file,...".
  if (const char* list = std::getenv("AUTOREG_BENCH_GENOTYPES")) {
    std::stringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos) continue;
      NetworkSpec spec;
      spec.genotype = read_genotype(item.substr(eq + 1));
      networks.emplace_back(item.substr(0, eq), spec);
    }
  }
  for (const auto& [name, spec] : networks) {
    benchmark::RegisterBenchmark(("network_forward/" + name + "/" + dev + "/160").c_str(),
                                 [spec = spec, device](benchmark::State& st) { run_forward(st, spec, device); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (const Edge& e : kEdges) {
    for (const char* op : kOperations) {
      benchmark::RegisterBenchmark(("op_cost/" + dev + "/" + e.name + "/" + op).c_str(),
                                   [e, op, device](benchmark::State& st) { run_edge(st, e, op, device); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}
