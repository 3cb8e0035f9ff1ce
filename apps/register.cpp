// autoreg register --fixed F --moving M --out-warped W --out-field D
//                  [--moving-labels L --out-labels WL] [--out-affine A.tfm]
//                  [--affine-only | --no-affine] [--similarity ncc|mse|mind]
//                  [--regularization λ] [--iterations N1,N2] [--affine-iterations N1,N2]
//                  [--fixed-orientation C] [--moving-orientation C]
//                  [--model FILE|default [--refine K]]
//                  [--device cpu|cuda] [--threads T] [--seed S] [--force] [--json]
//
// Affine pre-alignment in physical space, then a deformable field: a trained model's
// prediction (optionally refined by K steps of instance optimisation), or without a
// model instance optimisation of a diffeomorphic field on the pair
// (autoreg/pipeline/register_pair.h). The moving image and labels are sampled once,
// through the composed map.
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "autoreg/pipeline/default_model.h"
#include "autoreg/pipeline/register_pair.h"
#include "autoreg/registration/metrics.h"
#include "autoreg/registration/model_file.h"
#include "exit_codes.h"
#include "options.h"

namespace autoreg::apps {
namespace {

struct RegisterParams {
  std::string fixed, moving, out_warped, out_field, moving_labels, out_labels, out_affine;
  std::string model;  // "" = instance optimisation
  pipeline::PairOptions options;
  std::string fixed_orientation, moving_orientation;  // header overrides ("" = trust it)
  bool force = false;  // resample a label map that is not on its image's grid
  bool json = false;
};

std::vector<int64_t> parse_levels(const std::string& option, const std::string& s) {
  std::vector<int64_t> out = parse_int_list(option, s);
  for (int64_t n : out) {
    if (n < 0) throw UsageError(option + ": counts must be >= 0");
  }
  if (out.size() != 2) throw UsageError(option + ": give two counts, coarse level first");
  return out;
}

std::string describe(const io::Geometry& g) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%ld×%ld×%ld voxels of %.3g×%.3g×%.3g mm, origin (%.1f, %.1f, %.1f)",
                long(g.size[0]), long(g.size[1]), long(g.size[2]), g.spacing[0], g.spacing[1],
                g.spacing[2], g.origin[0], g.origin[1], g.origin[2]);
  return buf;
}

// The moving label map on its image's grid: as it is when it is on that grid; otherwise
// an error, or with --force a nearest-neighbour resampling (with a warning).
io::Volume moving_labels_on_grid(const RegisterParams& p, const io::Geometry& image_grid) {
  io::Volume labels = io::read_volume(p.moving_labels, io::PixelKind::Labels);
  if (io::same_grid(labels.geometry, image_grid)) return labels;
  const std::string what = p.moving_labels + ": not on the grid of its image " + p.moving + " (" +
                           describe(labels.geometry) + " against " + describe(image_grid) + ")";
  if (!p.force) throw io::IoError(what + "; rerun with --force to resample it by nearest neighbour");
  std::fprintf(stderr, "warning: %s; resampling it by nearest neighbour (--force)\n", what.c_str());
  return io::resample(labels, image_grid, io::Resampling::Nearest);
}

// A warning when the two volumes' physical extents differ by more than 2× along an
// axis (sorted, so that orientation does not matter): a wrong header spacing, or not
// the same anatomy.
void warn_on_extents(const RegisterParams& p, const io::Geometry& f, const io::Geometry& m) {
  std::array<double, 3> ef{}, em{};
  for (int a = 0; a < 3; ++a) {
    ef[a] = double(f.size[a]) * f.spacing[a];
    em[a] = double(m.size[a]) * m.spacing[a];
  }
  std::sort(ef.begin(), ef.end());
  std::sort(em.begin(), em.end());
  for (int a = 0; a < 3; ++a) {
    const double ratio = std::max(ef[a], em[a]) / std::max(1e-9, std::min(ef[a], em[a]));
    if (ratio > 2.0) {
      std::fprintf(stderr,
                   "warning: %s (%.0f×%.0f×%.0f mm) and %s (%.0f×%.0f×%.0f mm) cover very "
                   "different physical extents; check that they show the same anatomy and that "
                   "their headers' spacing is right\n",
                   p.fixed.c_str(), ef[0], ef[1], ef[2], p.moving.c_str(), em[0], em[1], em[2]);
      return;
    }
  }
}

// Writes the outputs; if one fails, removes those already written by this run.
class Outputs {
 public:
  template <typename Write>
  void write(const std::string& path, Write&& write) {
    try {
      write();
      written_.push_back(path);
    } catch (...) {
      std::error_code ec;
      for (const auto& w : written_) std::filesystem::remove(w, ec);
      throw;
    }
  }

 private:
  std::vector<std::string> written_;
};

nlohmann::json run(RegisterParams p) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string* out : {&p.out_warped, &p.out_field, &p.out_labels, &p.out_affine}) {
    if (!out->empty()) io::check_output(*out);
  }
  pipeline::StageTimes times;
  if (!p.model.empty()) p.options.model = std::make_shared<registration::Model>(registration::load_model(p.model));
  io::Volume fixed = io::read_volume(p.fixed);
  io::Volume moving = io::read_volume(p.moving);
  io::Volume labels;
  if (!p.moving_labels.empty()) labels = moving_labels_on_grid(p, moving.geometry);
  if (!p.fixed_orientation.empty()) fixed.geometry = io::with_orientation(fixed.geometry, p.fixed_orientation);
  if (!p.moving_orientation.empty()) {
    moving.geometry = io::with_orientation(moving.geometry, p.moving_orientation);
    labels.geometry = moving.geometry;
  }
  warn_on_extents(p, fixed.geometry, moving.geometry);
  times.lap("read");

  const bool tty = ::isatty(fileno(stderr));
  auto progress = [tty](const char* stage, const std::vector<int64_t>& iterations) {
    return [tty, stage, iterations](int level, int64_t it, double loss) {
      const int64_t total = iterations[level];
      if (tty && (it % 10 == 0 || it + 1 == total)) {
        std::fprintf(stderr, "\r%-10s level %d/%zu  step %4ld/%ld  loss %.5f   ", stage, level + 1,
                     iterations.size(), long(it + 1), long(total), loss);
        if (it + 1 == total) std::fprintf(stderr, "\n");
      }
    };
  };
  p.options.affine.progress = progress("affine", p.options.affine.iterations);
  p.options.deformable.progress =
      progress(p.options.model ? "refine" : "deformable", pipeline::deformable_levels(p.options));
  // The fixed voxels are handed over (only its grid is needed after); the moving ones are
  // kept for the warped output.
  const pipeline::PairResult r =
      pipeline::register_pair({std::move(fixed.data), fixed.geometry}, moving, p.options, &times);

  c10::AutoGradMode no_grad(false);
  const io::Volume warped{io::sample_mapped(moving, fixed.geometry, at::Tensor(), r.displacement), fixed.geometry};
  io::Volume warped_labels;
  if (!p.out_labels.empty()) {
    warped_labels = {io::sample_mapped(labels, fixed.geometry, at::Tensor(), r.displacement), fixed.geometry};
  }
  times.lap("warp");
  Outputs outputs;
  outputs.write(p.out_warped, [&] { io::write_volume(p.out_warped, warped); });
  outputs.write(p.out_field, [&] { io::write_displacement_field(p.out_field, r.displacement, fixed.geometry); });
  if (!p.out_labels.empty()) {
    outputs.write(p.out_labels, [&] { io::write_volume(p.out_labels, warped_labels); });
  }
  if (!p.out_affine.empty()) {
    outputs.write(p.out_affine, [&] { io::write_affine(p.out_affine, r.affine); });
  }
  times.lap("write");
  const auto j = registration::jacobian_stats(r.displacement);
  times.lap("jacobian");
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [stage, s] : times.seconds()) stages[stage] = s;
  nlohmann::json stage_peaks = nlohmann::json::object();
  for (const auto& [stage, mib] : times.peak_mib()) stage_peaks[stage] = mib;
  nlohmann::json affine = nlohmann::json::array();
  for (int64_t row = 0; row < 4; ++row) {
    affine.push_back(std::vector<double>(r.affine[row].data_ptr<double>(),
                                         r.affine[row].data_ptr<double>() + 4));
  }
  return {{"fixed", p.fixed},
          {"moving", p.moving},
          {"out_warped", p.out_warped},
          {"out_field", p.out_field},
          {"affine_lps", affine},
          {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
          {"stage_seconds", stages},
          {"stage_peak_memory_mib", stage_peaks},
          {"peak_memory_mib", pipeline::peak_resident_mib()},
          {"threads", at::get_num_threads()},
          {"device", p.options.device},
          {"model", p.model},
          {"non_positive_jacobian_percent", j.non_positive_percent},
          {"log_jacobian_std", j.log_std}};
}

}  // namespace

int run_register(int argc, char** argv) {
  TCLAP::CmdLine cmd("Register a moving volume to a fixed one: affine pre-alignment in physical "
                     "space, then a deformable field predicted by a trained network (--model), or "
                     "without a model a diffeomorphic field optimised on the pair (stationary "
                     "velocity, scaling and squaring, coarse to fine).",
                     ' ', "0.1");
  TCLAP::ValueArg<std::string> fixed("", "fixed", "fixed image", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving("", "moving", "moving image", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_warped("", "out-warped", "moving image on the fixed grid", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_field("", "out-field", "displacement field, affine and deformable together (LPS mm, fixed grid; .h5: ITK DisplacementFieldTransform)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving_labels("", "moving-labels", "moving label map to warp", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_labels("", "out-labels", "warped label map", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_affine("", "out-affine", "the affine alone, as an ITK transform file (.tfm, .txt, .mat, .h5)", false, "", "FILE", cmd);
  TCLAP::SwitchArg affine_only("", "affine-only", "stop after the affine pre-alignment", cmd, false);
  TCLAP::SwitchArg no_affine("", "no-affine", "skip the affine pre-alignment (already aligned inputs)", cmd, false);
  std::vector<std::string> sims = {"ncc", "mse", "mind"};
  TCLAP::ValuesConstraint<std::string> sim_allowed(sims);
  TCLAP::ValueArg<std::string> similarity("", "similarity", "ncc (default), mse, or mind (MIND-SSC, for different modalities)", false, "ncc", &sim_allowed, cmd);
  TCLAP::ValueArg<double> lambda("", "regularization", "weight of the smoothness term (default 1)", false, 1.0, "λ", cmd);
  TCLAP::ValueArg<std::string> iterations("", "iterations", "deformable Adam steps at 1/4 and 1/2 resolution (default 70,20)", false, "70,20", "N1,N2", cmd);
  TCLAP::ValueArg<std::string> affine_iterations("", "affine-iterations", "affine Adam steps at 4 mm and 2 mm (default 150,100)", false, "150,100", "N1,N2", cmd);
  std::vector<std::string> devices = {"cpu", "cuda"};
  TCLAP::ValuesConstraint<std::string> device_allowed(devices);
  TCLAP::ValueArg<std::string> model("", "model", "a trained model (.autoreg, from autoreg train), or 'default' for the model shipped with autoreg; without it, instance optimisation", false, "", "FILE", cmd);
  TCLAP::ValueArg<int> refine("", "refine", "with --model: Adam steps of instance optimisation (1/2 resolution) refining the network's field (default 0)", false, 0, "K", cmd);
  TCLAP::ValueArg<std::string> device("", "device", "cpu (default) or cuda", false, "cpu", &device_allowed, cmd);
  TCLAP::ValueArg<int> threads("", "threads", "CPU threads (default: all)", false, 0, "T", cmd);
  TCLAP::ValueArg<uint64_t> seed("", "seed", "random seed (default 0)", false, 0, "S", cmd);
  TCLAP::ValueArg<std::string> fixed_orientation("", "fixed-orientation", "override a wrong header: where the fixed image's voxel axes point, e.g. LIA", false, "", "CODE", cmd);
  TCLAP::ValueArg<std::string> moving_orientation("", "moving-orientation", "override a wrong header: where the moving image's (and labels') voxel axes point, e.g. LIA", false, "", "CODE", cmd);
  TCLAP::SwitchArg force("", "force", "resample a label map that is not on its image's grid (nearest neighbour)", cmd, false);
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
  p.out_affine = out_affine.getValue();
  if (p.moving_labels.empty() != p.out_labels.empty()) {
    throw UsageError("--moving-labels and --out-labels go together");
  }
  refuse_overwrite({&p.out_warped, &p.out_field, &p.out_labels, &p.out_affine},
                   {&p.fixed, &p.moving, &p.moving_labels});
  if (lambda.getValue() < 0) throw UsageError("--regularization must be >= 0");
  if (affine_only.getValue() && no_affine.getValue()) {
    throw UsageError("--affine-only and --no-affine exclude each other");
  }
  auto& o = p.options;
  o.stages = affine_only.getValue() ? pipeline::Stages::AffineOnly
             : no_affine.getValue() ? pipeline::Stages::DeformableOnly
                                    : pipeline::Stages::AffineAndDeformable;
  o.affine.similarity = o.deformable.similarity = similarity.getValue();
  o.deformable.regularization = lambda.getValue();
  o.deformable.iterations = parse_levels("--iterations", iterations.getValue());
  o.affine.iterations = parse_levels("--affine-iterations", affine_iterations.getValue());
  o.deformable.seed = seed.getValue();
  o.device = device.getValue();
  if (refine.getValue() < 0) throw UsageError("--refine must be >= 0");
  if (refine.getValue() > 0 && model.getValue().empty()) throw UsageError("--refine needs --model");
  if (iterations.isSet() && !model.getValue().empty()) {
    throw UsageError("--iterations sets instance optimisation, which --model replaces (use --refine K)");
  }
  if (!model.getValue().empty() && affine_only.getValue()) {
    throw UsageError("--model and --affine-only exclude each other (the model is the deformable stage)");
  }
  try {
    p.model = pipeline::resolve_model_name(model.getValue());
  } catch (const pipeline::NoDefaultModel& e) {
    throw UsageError(std::string("--model default: ") + e.what());
  }
  o.refine = refine.getValue();
  p.force = force.getValue();
  p.fixed_orientation = checked_orientation("--fixed-orientation", fixed_orientation.getValue());
  p.moving_orientation = checked_orientation("--moving-orientation", moving_orientation.getValue());
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
