#include "autoreg/search/op_cost.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <vector>

#include "autoreg/base/atomic_file.h"
#include "autoreg/device.h"
#include "autoreg/registration/autoreg_net.h"
#include "autoreg/registration/operations.h"

namespace autoreg::search {
namespace {

double median_ms(const std::function<void()>& run, int repetitions, const at::Device& device) {
  const auto sync = [&] {
    if (device.is_cuda()) at::zeros({1}, device).cpu();  // waits for the stream
  };
  run();  // warm-up: oneDNN builds its primitives on the first call
  sync();
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repetitions); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    sync();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

}  // namespace

OpCosts measure_op_costs(const std::array<int64_t, 3>& grid, const registration::NetworkSpec& base,
                         const std::string& device_name, int repetitions,
                         const std::function<void(const std::string&)>& progress) {
  const at::Device device = ops::parse_device(device_name);
  c10::AutoGradMode no_grad(false);
  OpCosts c;
  c.grid = grid;
  c.threads = at::get_num_threads();
  c.device = device_name;
  const auto layout = registration::edge_layout(base.matching_cost);
  for (int e = 0; e < kEdges; ++e) {
    const auto& l = layout[e];
    const at::Tensor x = at::rand({l.batch, l.in, grid[0] / l.scale, grid[1] / l.scale, grid[2] / l.scale}, device);
    for (int k = 0; k < kCandidates; ++k) {
      auto edge = registration::make_edge(registration::kOperations[k], l.in, l.out, l.stride);
      edge->to(device);
      c.ms[e][k] = median_ms([&] { edge->forward(x); }, repetitions, device);
    }
    if (progress) {
      char line[160];
      std::snprintf(line, sizeof line, "op cost %s: %.1f ms (1x1) .. %.1f ms (dil 7x7)", l.name, c.ms[e][0],
                    c.ms[e][kCandidates - 1]);
      progress(line);
    }
  }
  registration::NetworkSpec spec = base;
  spec.kind = "autoreg";
  auto net = registration::make_network(spec);
  net->to(device);
  net->eval();
  const at::Tensor m = at::rand({1, 1, grid[0], grid[1], grid[2]}, device), f = at::rand_like(m);
  const double whole = median_ms([&] { net->forward(m, f); }, repetitions, device);
  double edges = 0;
  for (int e = 0; e < kEdges; ++e) edges += c.ms[e][operation_index(base.genotype.edges[e])];
  c.overhead_ms = std::max(0.0, whole - edges);
  if (progress) {
    char line[160];
    std::snprintf(line, sizeof line, "op cost: the %s network %.1f ms, of which %.1f ms outside its edges",
                  base.genotype == registration::Genotype::standard() ? "default" : "base", whole, c.overhead_ms);
    progress(line);
  }
  return c;
}

void save_op_costs(const std::string& path, const OpCosts& c) {
  nlohmann::json j;
  j["grid"] = c.grid;
  j["threads"] = c.threads;
  j["device"] = c.device;
  j["overhead_ms"] = c.overhead_ms;
  const auto layout = registration::edge_layout(true);
  for (int e = 0; e < kEdges; ++e) {
    for (int k = 0; k < kCandidates; ++k) j["ms"][layout[e].name][registration::kOperations[k]] = c.ms[e][k];
  }
  try {
    base::write_file_atomically(path, j.dump(1) + "\n");
  } catch (const base::WriteError&) {
    bad(path, "cannot write the operation costs");
  }
}

OpCosts load_op_costs(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad(path, "cannot open the operation-cost file");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad(path, "not a JSON object");
  OpCosts c;
  try {
    c.grid = j.at("grid").get<std::array<int64_t, 3>>();
    c.threads = j.value("threads", 0);
    c.device = j.value("device", std::string("cpu"));
    c.overhead_ms = j.at("overhead_ms").get<double>();
    const auto layout = registration::edge_layout(true);
    for (int e = 0; e < kEdges; ++e) {
      if (!j.at("ms").contains(layout[e].name)) bad(path, std::string("no costs for edge ") + layout[e].name);
      const auto& row = j["ms"][layout[e].name];
      for (int k = 0; k < kCandidates; ++k) {
        const char* op = registration::kOperations[k];
        if (!row.contains(op)) bad(path, std::string("edge ") + layout[e].name + " has no cost for " + op);
        c.ms[e][k] = row[op].get<double>();
        if (!std::isfinite(c.ms[e][k]) || c.ms[e][k] <= 0) {
          bad(path, std::string("edge ") + layout[e].name + ", " + op + ": the time must be a positive number");
        }
      }
    }
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string("malformed operation costs (") + e.what() + ")");
  }
  if (!std::isfinite(c.overhead_ms) || c.overhead_ms < 0) bad(path, "overhead_ms must be >= 0");
  return c;
}

double predicted_ms(const OpCosts& costs, const registration::Genotype& genotype) {
  double sum = costs.overhead_ms;
  for (int e = 0; e < kEdges; ++e) sum += costs.ms[e][operation_index(genotype.edges[e])];
  return sum;
}

at::Tensor expected_ms(const OpCosts& costs, const at::Tensor& probabilities) {
  std::vector<double> flat;
  for (const auto& row : costs.ms) flat.insert(flat.end(), row.begin(), row.end());
  const at::Tensor ms = at::tensor(flat, probabilities.options().requires_grad(false)).view({kEdges, kCandidates});
  return (probabilities * ms).sum() + costs.overhead_ms;
}

CandidateMask candidates_within(const OpCosts& costs, double budget_ms, const std::array<bool, kEdges>& searched,
                                const registration::Genotype& base) {
  CandidateMask allowed{};
  std::array<double, kEdges> cheapest{};
  double floor = costs.overhead_ms;
  for (int e = 0; e < kEdges; ++e) {
    cheapest[e] = searched[e] ? *std::min_element(costs.ms[e].begin(), costs.ms[e].end())
                              : costs.ms[e][operation_index(base.edges[e])];
    floor += cheapest[e];
  }
  if (budget_ms > 0 && floor > budget_ms) {
    char m[200];
    std::snprintf(m, sizeof m, "a forward-time budget of %.1f ms cannot be met: the cheapest network takes %.1f ms at this grid",
                  budget_ms, floor);
    throw std::invalid_argument(m);
  }
  for (int e = 0; e < kEdges; ++e) {
    for (int k = 0; k < kCandidates; ++k) {
      allowed[e][k] = budget_ms <= 0 || floor - cheapest[e] + costs.ms[e][k] <= budget_ms;
    }
  }
  return allowed;
}

registration::Genotype derive_genotype(const at::Tensor& probabilities, const OpCosts& costs, double budget_ms,
                                       const std::array<bool, kEdges>& searched, const CandidateMask& allowed,
                                       const registration::Genotype& base) {
  const at::Tensor p = probabilities.detach().to(at::kDouble).cpu().contiguous();
  const auto prob = [&](int e, int k) { return p[e][k].item<double>(); };
  std::array<int, kEdges> choice{};
  for (int e = 0; e < kEdges; ++e) {
    choice[e] = operation_index(base.edges[e]);
    if (!searched[e]) continue;
    int best = -1;
    for (int k = 0; k < kCandidates; ++k) {
      if (allowed[e][k] && (best < 0 || prob(e, k) > prob(e, best))) best = k;
    }
    choice[e] = best;
  }
  const auto genotype = [&] {
    registration::Genotype g = base;
    for (int e = 0; e < kEdges; ++e) g.edges[e] = registration::kOperations[choice[e]];
    return g;
  };
  while (budget_ms > 0 && predicted_ms(costs, genotype()) > budget_ms) {
    double best_price = std::numeric_limits<double>::infinity();
    int best_e = -1, best_k = -1;
    for (int e = 0; e < kEdges; ++e) {
      if (!searched[e]) continue;
      const int now = choice[e];
      for (int k = 0; k < kCandidates; ++k) {
        const double saved = costs.ms[e][now] - costs.ms[e][k];
        if (!allowed[e][k] || saved <= 0) continue;
        const double lost = std::log(std::max(prob(e, now), 1e-30)) - std::log(std::max(prob(e, k), 1e-30));
        const double price = lost / saved;
        if (price < best_price) {
          best_price = price;
          best_e = e;
          best_k = k;
        }
      }
    }
    if (best_e < 0) {
      throw std::invalid_argument("no genotype of the allowed candidates fits the forward-time budget");
    }
    choice[best_e] = best_k;
  }
  return genotype();
}

}  // namespace autoreg::search
