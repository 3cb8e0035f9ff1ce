#include "search_outputs.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "autoreg/device.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/qc/search_report.h"
#include "autoreg/registration/autoreg_net.h"
#include "autoreg/registration/operations.h"

namespace autoreg::pipeline::detail {

namespace {

nlohmann::json terms_json(const std::array<double, registration::kObjectiveTerms>& v) {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < registration::kObjectiveTerms; ++i) j[registration::kObjectiveTermNames[i]] = v[i];
  return j;
}

std::vector<std::vector<double>> rows(const at::Tensor& p) {
  std::vector<std::vector<double>> out(p.size(0));
  for (int64_t e = 0; e < p.size(0); ++e) {
    for (int64_t k = 0; k < p.size(1); ++k) out[e].push_back(p[e][k].item<double>());
  }
  return out;
}

}  // namespace

nlohmann::json search_log_line(const search::Searcher& s, const search::SearchStep& r, double seconds) {
  nlohmann::json j = {{"step", r.step},
                      {"seconds", seconds},
                      {"phase", search::phase_name(r.phase)},
                      {"loss", r.loss},
                      {"terms", terms_json(r.terms)},
                      {"lambda", terms_json(r.lambda)},
                      {"probabilities", rows(s.probabilities())},
                      {"entropy", s.entropy()},
                      {"predicted_ms", s.expected_forward_ms()},
                      {"genotype", s.derived().to_string()}};
  if (r.architecture_updated) j["validation_loss"] = r.validation_loss;
  if (r.objective_updated) j["hyper_dice_loss"] = r.hyper_dice;
  if (r.rollbacks > 0) j["rollbacks"] = r.rollbacks;
  j["gradient_norm"] = r.gradient_norm;
  j["gradient_average"] = r.gradient_average;
  j["weight_voxels"] = r.weight_voxels;
  j["step_seconds"] = {{"weights", r.seconds_weights}, {"objective", r.seconds_objective},
                       {"architecture", r.seconds_architecture}};
  if (s.collective()) j["allreduce_seconds"] = r.seconds_allreduce;
  return j;
}

double measure_forward_ms(const registration::NetworkSpec& spec, const std::array<int64_t, 3>& grid,
                          const std::string& device_name, int repetitions) {
  const at::Device device = ops::parse_device(device_name);
  c10::AutoGradMode no_grad(false);
  auto net = registration::make_network(spec);
  net->to(device);
  net->eval();
  const at::Tensor m = at::rand({1, 1, grid[0], grid[1], grid[2]}, device), f = at::rand_like(m);
  std::vector<double> times;
  for (int r = 0; r <= repetitions; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    net->forward(m, f).cpu();
    if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

nlohmann::json search_summary(const search::Searcher& s, const registration::ModelInfo& info, const nlohmann::json& run,
                              const std::array<double, search::kEdges>& entropy_start) {
  const auto layout = registration::edge_layout(info.network.matching_cost);
  const registration::Genotype g = s.derived();
  nlohmann::json j = run;
  std::vector<std::string> edges, ops(registration::kOperations.begin(), registration::kOperations.end());
  for (const auto& l : layout) edges.emplace_back(l.name);
  j["genotype"] = std::vector<std::string>(g.edges.begin(), g.edges.end());
  j["edges"] = edges;
  j["operations"] = ops;
  j["searched"] = s.supernet().searched();
  j["probabilities"] = rows(s.probabilities());
  j["entropy_start"] = entropy_start;
  j["entropy_end"] = s.entropy();
  j["lambda"] = terms_json(s.objective().lambda);
  j["objective"] = s.objective().to_string();
  j["predicted_forward_ms"] = search::predicted_ms(s.costs(), g);
  j["grid"] = info.grid;
  j["spacing_mm"] = info.spacing[0];
  j["steps"] = s.steps_done();
  return j;
}

std::string genotype_file_text(const registration::Genotype& g, const nlohmann::json& summary) {
  const auto layout = registration::edge_layout(true);
  std::string text = "# autoreg genotype: one operation per edge (autoreg train --genotype reads this file)\n";
  text += "# found by autoreg search: " + summary.value("objective", std::string()) + "\n";
  for (int e = 0; e < registration::kGenotypeEdges; ++e) {
    text += g.edges[e] + std::string(14 - std::min<size_t>(13, g.edges[e].size()), ' ') + "# " + layout[e].name + "\n";
  }
  return text;
}

std::vector<nlohmann::json> log_with_evaluations(const std::string& log, const std::string& evaluations) {
  std::vector<nlohmann::json> lines = qc::read_json_lines(log);
  std::map<int64_t, double> dice;
  for (const auto& e : parallel::read_evaluations(evaluations, -1)) {
    if (std::isfinite(e.dice)) dice[e.step] = e.dice;
  }
  if (dice.empty()) return lines;
  for (auto& line : lines) {
    if (line.contains("validated_step")) line.erase("validation_dice");
    const auto it = line.contains("step") ? dice.find(line["step"].get<int64_t>()) : dice.end();
    if (it != dice.end()) line["validation_dice"] = it->second;
  }
  return lines;
}

}  // namespace autoreg::pipeline::detail
