// The device check's measurements, one run, each on the same device: autoreg's warp
// against torch's grid_sample (forward, forward + backward, 1 and 3 channels), the
// networks' forward pass (the AutoReg network with the default and the searched
// genotype, the U-Net) against the AutoReg paper's GPU figures, a training step of the
// default model's recipe and a search step, with the peak memory of each. Times are the
// median of --repeats runs after one warm-up.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "autoreg/ops.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/network.h"
#include "autoreg/registration/train.h"
#include "autoreg/registration/training_set_file.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/searcher.h"
#include "device_check.h"
#include "ops/helpers.h"  // tests/: the field → grid_sample grid conversion

namespace autoreg::device {
namespace {

using Clock = std::chrono::steady_clock;

// The AutoReg paper's forward times at 160×192×224 on its GPU (AutoReg, Table 3).
constexpr double kPaperSearchedSeconds = 0.270, kPaperUnetSeconds = 0.558;

std::array<int64_t, 3> parse_size(const std::string& text) {
  std::array<int64_t, 3> s{};
  if (std::sscanf(text.c_str(), "%ldx%ldx%ld", &s[0], &s[1], &s[2]) != 3 || s[0] <= 0 || s[1] <= 0 || s[2] <= 0) {
    throw std::invalid_argument("--size: expected DxHxW, got '" + text + "'");
  }
  return s;
}

// Median seconds of `repeats` runs of `body` after one warm-up, and the peak memory.
nlohmann::json timed(const at::Device& device, int repeats, const std::function<void()>& body) {
  reset_peak(device);
  body();
  sync(device);
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    body();
    sync(device);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return {{"seconds", seconds[seconds.size() / 2]}, {"peak_mib", peak_mib(device)}, {"repeats", repeats}};
}

// Runs one measurement; a failure is recorded in its row and the others go on.
void row(nlohmann::json& rows, const std::string& name, const std::function<nlohmann::json()>& run) {
  std::fprintf(stderr, "measure: %s\n", name.c_str());
  nlohmann::json r;
  try {
    r = run();
  } catch (const std::exception& e) {
    r = {{"error", e.what()}};
    std::fprintf(stderr, "measure: %s failed: %s\n", name.c_str(), e.what());
  }
  r["name"] = name;
  rows.push_back(r);
}

void warp_rows(nlohmann::json& rows, const at::Device& device, const std::array<int64_t, 3>& s, int repeats) {
  for (int64_t channels : {1, 3}) {
    const std::string tail = "/" + std::to_string(channels) + "ch";
    const auto inputs = [&] {
      at::manual_seed(0);
      const at::Tensor image = at::rand({1, channels, s[0], s[1], s[2]}, device);
      const at::Tensor disp = at::randn({1, 3, s[0], s[1], s[2]}, device) * 3.0;
      return std::make_pair(image, disp);
    };
    using Warp = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;
    const Warp ours = [](const at::Tensor& i, const at::Tensor& d) {
      return ops::warp(i, d, ops::Interpolation::Linear, ops::Padding::Zeros);
    };
    const Warp theirs = [](const at::Tensor& i, const at::Tensor& d) {
      return test::grid_sample_warp(i, d, ops::Interpolation::Linear, ops::Padding::Zeros);
    };
    for (const auto& [name, warp] : {std::make_pair(std::string("warp"), ours), std::make_pair(std::string("grid_sample"), theirs)}) {
      row(rows, name + "_fwd" + tail, [&, warp = warp] {
        c10::AutoGradMode no_grad(false);
        const auto [image, disp] = inputs();
        return timed(device, repeats, [&] { (void)warp(image, disp); });
      });
      row(rows, name + "_fwd_bwd" + tail, [&, warp = warp] {
        auto [image, disp] = inputs();
        image.requires_grad_(true);
        disp.requires_grad_(true);
        return timed(device, repeats, [&] {
          warp(image, disp).sum().backward();
          image.mutable_grad().reset();
          disp.mutable_grad().reset();
        });
      });
    }
  }
}

void network_rows(nlohmann::json& rows, const at::Device& device, const std::array<int64_t, 3>& s, int repeats,
                  const registration::NetworkSpec& searched) {
  registration::NetworkSpec unet;
  unet.kind = "unet";
  const std::vector<std::tuple<std::string, registration::NetworkSpec, double>> networks = {
      {"network_forward/autoreg_default", registration::NetworkSpec{}, 0.0},
      {"network_forward/autoreg_searched", searched, kPaperSearchedSeconds},
      {"network_forward/unet", unet, kPaperUnetSeconds}};
  for (const auto& [name, spec, paper] : networks) {
    row(rows, name, [&, spec = spec, paper = paper] {
      c10::AutoGradMode no_grad(false);
      at::manual_seed(0);
      auto net = registration::make_network(spec);
      net->to(device);
      net->eval();
      const at::Tensor m = at::rand({1, 1, s[0], s[1], s[2]}, device), f = at::rand({1, 1, s[0], s[1], s[2]}, device);
      nlohmann::json r = timed(device, repeats, [&] { (void)net->forward(m, f); });
      r["genotype"] = spec.kind == "unet" ? "unet" : spec.genotype.to_string();
      if (paper > 0) r["paper_seconds"] = paper;
      return r;
    });
  }
}

}  // namespace

nlohmann::json measure(const Args& args) {
  const at::Device device(args.get("device", "cpu") == "cuda" ? at::kCUDA : at::kCPU);
  const std::array<int64_t, 3> size = parse_size(args.get("size", "160x192x224"));
  const int repeats = std::max(1, int(args.number("repeats", 5)));
  nlohmann::json rows = nlohmann::json::array();
  warp_rows(rows, device, size, repeats);

  // The searched network: the default model's genotype and network options. A file that
  // cannot be read is a failed row; the measurements go on without it.
  registration::Model recipe;
  bool has_model = false;
  if (args.has("model")) {
    row(rows, "read_model", [&] {
      recipe = registration::load_model(args.get("model"));
      has_model = true;
      return nlohmann::json{{"file", args.get("model")}};
    });
  }
  network_rows(rows, device, size, repeats, has_model ? recipe.info.network : registration::NetworkSpec{});

  registration::TrainingSetFile set;
  bool has_set = false;
  if (args.has("set")) {
    row(rows, "read_set", [&] {
      set = registration::read_training_set(args.get("set"));
      has_set = true;
      return nlohmann::json{{"file", args.get("set")}, {"grid", set.info.grid}};
    });
  }
  if (has_set) {
    row(rows, "train_step", [&] {
      registration::ModelInfo info = set.info;
      if (has_model) info.network = recipe.info.network;
      at::manual_seed(0);
      registration::Model model = registration::make_model(info);
      registration::TrainOptions o = recipe_options(has_model ? recipe.info : registration::ModelInfo{}, device);
      o.steps = 1 << 30;
      registration::Trainer trainer(model, set.set, o);
      nlohmann::json r = timed(device, repeats, [&] { trainer.train_step(); });
      r["grid"] = info.grid;
      return r;
    });
    row(rows, "search_step", [&] {
      search::SearchOptions o;
      o.device = device.is_cuda() ? "cuda" : "cpu";
      o.warmup_fraction = 0;  // every step moves ω, α and λ
      o.architecture_every = 1;
      o.objective_every = 1;
      o.steps = 1 << 30;
      o.async_checkpoints = false;
      search::OpCosts costs;  // every candidate alike: no budget, nothing masked
      for (auto& edge : costs.ms) edge.fill(1.0);
      costs.grid = set.info.grid;
      search::Searcher searcher(set.set, set.info, o, costs);
      nlohmann::json r = timed(device, std::max(1, repeats / 2), [&] { searcher.step(); });
      r["grid"] = set.info.grid;
      return r;
    });
  }
  return {{"device", device_name(device)},
          {"size", size},
          {"threads", at::get_num_threads()},
          {"rows", rows}};
}

}  // namespace autoreg::device
