// Google Benchmark: what one step of the architecture-and-objective search costs against
// one training step of the default network, on one synthetic training set at the search
// grid of the OASIS-TRT runs (80×80×96 at 2 mm, 100 labels). Steps after the warm-up:
// the command's default (ω on the mixed network within the default budget, α on it every
// 3rd step, λ every 6th, both on boxes of 0.6 per axis, first order), the same with ω on
// boxes too (--weight-crop 0.6) in first and second order, second order alone, GDAS
// (sampled paths for ω and α: about one network, but it did not train on OASIS-TRT), and
// DARTS as published (every candidate, whole volumes) as the reference.
// A benchmark iteration is 6 steps (one whole α/λ cycle); the time is per step. Each
// reports `peak_rss_mib` (bench/search_cost.py runs each in its own process).
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <sys/resource.h>

#include <functional>
#include <memory>
#include <string>

#include "autoreg/ops.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/searcher.h"

namespace {

using namespace autoreg;

constexpr int64_t kD = 80, kH = 80, kW = 96;
constexpr int kStepsPerIteration = 6;  // the α (every 3rd) and λ (every 6th) cycle

double peak_rss_mib() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

// Smooth random images with ~100 labels (a smooth random field cut into levels), as many
// as the OASIS-TRT label maps have: the Dice terms cost by the label.
registration::Subject subject(int index) {
  at::manual_seed(index);
  const auto smooth = [](int64_t points) {
    return at::upsample_trilinear3d(at::rand({1, 1, points, points, points}), {kD, kH, kW}, true);
  };
  const at::Tensor image = (0.7 * smooth(6) + 0.3 * smooth(12)).clamp(0, 1);
  const at::Tensor labels = (smooth(8) * 99.99).floor().to(at::kInt);
  return {"s" + std::to_string(index), image, labels};
}

registration::TrainingSet data() {
  registration::TrainingSet set;
  for (int i = 0; i < 5; ++i) set.train.push_back(subject(i));
  for (int i = 0; i < 2; ++i) set.validation.push_back(subject(50 + i));
  return set;
}

registration::ModelInfo info() {
  registration::ModelInfo i;
  i.grid = {kD, kH, kW};
  return i;
}

const search::OpCosts& costs() {
  static const search::OpCosts c = search::measure_op_costs(info().grid, info().network, "cpu", 2);
  return c;
}

void train_step(benchmark::State& st) {
  at::manual_seed(0);
  registration::Model model = registration::make_model(info());
  registration::TrainOptions o;
  o.learning_rate = 1e-3;
  o.steps = 1 << 30;
  registration::Trainer trainer(model, data(), o);
  trainer.train_step();  // warm-up
  for (auto _ : st) {
    for (int i = 0; i < kStepsPerIteration; ++i) trainer.train_step();
  }
  st.counters["seconds_per_step"] =
      benchmark::Counter(double(st.iterations()) * kStepsPerIteration, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  st.counters["peak_rss_mib"] = peak_rss_mib();
}

// A step after the warm-up, with the command's defaults (the default network's forward
// time as the budget) changed by `change`.
void search_step(benchmark::State& st, const std::function<void(search::SearchOptions&)>& change) {
  search::SearchOptions o;
  o.steps = 1 << 30;
  o.warmup_fraction = 0;
  o.budget_ms = search::predicted_ms(costs(), registration::Genotype::standard());
  change(o);
  at::manual_seed(0);
  search::Searcher searcher(data(), info(), o, costs());
  double weights = 0, objective = 0, architecture = 0;
  for (auto _ : st) {
    for (int i = 0; i < kStepsPerIteration; ++i) {
      const search::SearchStep r = searcher.step();
      weights += r.seconds_weights;
      objective += r.seconds_objective;
      architecture += r.seconds_architecture;
    }
  }
  const double steps = double(st.iterations()) * kStepsPerIteration;
  st.counters["seconds_per_step"] = benchmark::Counter(steps, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  st.counters["weights_s"] = weights / steps;
  st.counters["objective_s"] = objective / steps;
  st.counters["architecture_s"] = architecture / steps;
  st.counters["peak_rss_mib"] = peak_rss_mib();
}

}  // namespace

void register_search_benchmarks() {
  const auto reg = [](const std::string& name, auto fn, int iterations) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(iterations);
  };
  reg("search_cost/train_step", [](benchmark::State& st) { train_step(st); }, 3);
  using Options = search::SearchOptions;
  const auto step = [&](const std::string& name, std::function<void(Options&)> change, int iterations) {
    reg("search_cost/search_step/" + name, [change](benchmark::State& st) { search_step(st, change); }, iterations);
  };
  step("default", [](Options&) {}, 3);
  step("second_order", [](Options& o) { o.order = search::Order::Second; }, 3);
  // ω's mixed steps on whole volumes (the default before --weight-crop 0.6).
  step("whole_volumes", [](Options& o) { o.weight_crop = 1; }, 2);
  step("gdas", [](Options& o) { o.path = o.architecture_path = search::Path::Sampled; o.weight_crop = 1; }, 3);
  // DARTS as published: every candidate on every edge (no budget), whole volumes.
  step("darts_full", [](Options& o) { o.budget_ms = 0; o.update_crop = 1; }, 1);
}
