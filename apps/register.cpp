// autoreg register --fixed F --moving M --out-warped W --out-field D
//                  [--moving-labels L --out-labels WL] [--similarity ncc|mse]
//                  [--regularization λ] [--iterations N1,N2] [--threads T] [--seed S] [--json]
//
// Without a model: instance optimisation of a diffeomorphic field on the pair
// (registration/instance.h). The moving image is first brought onto the fixed grid by
// physical position (no affine pre-alignment yet).
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "autoreg/ops.h"
#include "autoreg/registration/instance.h"
#include "autoreg/registration/metrics.h"
#include "exit_codes.h"
#include "options.h"
#include "warp_volume.h"

namespace autoreg::apps {
namespace {

struct RegisterParams {
  std::string fixed, moving, out_warped, out_field, moving_labels, out_labels;
  registration::InstanceOptions options;
  bool json = false;
};

std::vector<int64_t> parse_iterations(const std::string& s) {
  std::vector<int64_t> out = parse_int_list("--iterations", s);
  for (int64_t n : out) {
    if (n < 0) throw UsageError("--iterations: counts must be >= 0");
  }
  if (out.size() != 2) throw UsageError("--iterations: give two counts, for 1/4 and 1/2 resolution");
  return out;
}

nlohmann::json run(RegisterParams p) {
  const auto t0 = std::chrono::steady_clock::now();
  const io::Volume fixed = io::read_volume(p.fixed);
  const io::Volume moving =
      io::resample(io::read_volume(p.moving), fixed.geometry, io::Resampling::Linear);
  const bool tty = ::isatty(fileno(stderr));
  p.options.progress = [&](int level, int64_t it, double loss) {
    const int64_t total = p.options.iterations[level];
    if (tty && (it % 10 == 0 || it + 1 == total)) {
      std::fprintf(stderr, "\rlevel %d/2  iteration %4ld/%ld  loss %.5f   ", level + 1,
                   long(it + 1), long(total), loss);
      if (it + 1 == total) std::fprintf(stderr, "\n");
    }
  };
  const at::Tensor u = registration::fit_displacement(io::normalize_intensity(fixed.data),
                                                      io::normalize_intensity(moving.data), p.options);
  c10::AutoGradMode no_grad(false);
  io::write_volume(p.out_warped, {warp_volume(moving, u), fixed.geometry});
  io::write_displacement_field(p.out_field, u, fixed.geometry);
  if (!p.moving_labels.empty()) {
    const io::Volume labels = io::resample(io::read_volume(p.moving_labels, io::PixelKind::Labels),
                                           fixed.geometry, io::Resampling::Nearest);
    io::write_volume(p.out_labels, {warp_volume(labels, u), fixed.geometry});
  }
  const auto j = registration::jacobian_stats(u);
  return {{"fixed", p.fixed},
          {"moving", p.moving},
          {"out_warped", p.out_warped},
          {"out_field", p.out_field},
          {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
          {"threads", at::get_num_threads()},
          {"non_positive_jacobian_percent", j.non_positive_percent},
          {"log_jacobian_std", j.log_std}};
}

}  // namespace

int run_register(int argc, char** argv) {
  TCLAP::CmdLine cmd("Register a moving volume to a fixed one. Without a model: a diffeomorphic "
                     "field optimised on the pair (stationary velocity, scaling and squaring, "
                     "coarse to fine).", ' ', "0.1");
  TCLAP::ValueArg<std::string> fixed("", "fixed", "fixed image", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving("", "moving", "moving image", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_warped("", "out-warped", "moving image on the fixed grid", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_field("", "out-field", "displacement field (LPS mm, fixed grid)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving_labels("", "moving-labels", "moving label map to warp", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_labels("", "out-labels", "warped label map", false, "", "FILE", cmd);
  std::vector<std::string> sims = {"ncc", "mse"};
  TCLAP::ValuesConstraint<std::string> sim_allowed(sims);
  TCLAP::ValueArg<std::string> similarity("", "similarity", "ncc (default) or mse", false, "ncc", &sim_allowed, cmd);
  TCLAP::ValueArg<double> lambda("", "regularization", "weight of the smoothness term (default 1)", false, 1.0, "λ", cmd);
  TCLAP::ValueArg<std::string> iterations("", "iterations", "Adam steps at 1/4 and 1/2 resolution (default 100,25)", false, "100,25", "N1,N2", cmd);
  TCLAP::ValueArg<int> threads("", "threads", "CPU threads (default: all)", false, 0, "T", cmd);
  TCLAP::ValueArg<uint64_t> seed("", "seed", "random seed (default 0)", false, 0, "S", cmd);
  TCLAP::SwitchArg json("", "json", "print a JSON summary", cmd, false);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  RegisterParams p;
  p.fixed = fixed.getValue();
  p.moving = moving.getValue();
  p.out_warped = out_warped.getValue();
  p.out_field = out_field.getValue();
  p.moving_labels = moving_labels.getValue();
  p.out_labels = out_labels.getValue();
  if (p.moving_labels.empty() != p.out_labels.empty()) {
    throw UsageError("--moving-labels and --out-labels go together");
  }
  refuse_overwrite({&p.out_warped, &p.out_field, &p.out_labels},
                   {&p.fixed, &p.moving, &p.moving_labels});
  if (lambda.getValue() < 0) throw UsageError("--regularization must be >= 0");
  p.options.similarity = similarity.getValue();
  p.options.regularization = lambda.getValue();
  p.options.iterations = parse_iterations(iterations.getValue());
  p.options.seed = seed.getValue();
  if (threads.getValue() > 0) at::set_num_threads(threads.getValue());
  const nlohmann::json summary = run(p);
  if (json.getValue()) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf("wrote %s and %s in %.1f s; %.3f %% of voxels fold\n", p.out_warped.c_str(),
                p.out_field.c_str(), summary["seconds"].get<double>(),
                summary["non_positive_jacobian_percent"].get<double>());
  }
  return kOk;
}

}  // namespace autoreg::apps
