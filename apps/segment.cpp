// autoreg segment --atlases atlases.csv --target T1 --out labels
//                 [--fusion majority|weighted|jlf] [--patch-radius R] [--search-radius S] [--no-patch-vote]
//                 [--beta B] [--alpha A] [--power P]
//                 [--model FILE|default [--refine K]] [--iterations N1,N2] [--registered]
//                 [--out-probabilities DIR] [--out-warped-dir DIR [--out-inverse-fields]] [--target-labels FILE]
//                 [--qc qc.png] [--device cpu|cuda] [--threads T] [--json]
//
// Multi-atlas segmentation (autoreg/pipeline/segment.h): every atlas registered onto the
// target, its labels carried there, the labels fused (autoreg/segmentation/fusion.h).
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/pipeline/default_model.h"
#include "autoreg/pipeline/segment.h"
#include "autoreg/registration/metrics.h"
#include "autoreg/registration/model_file.h"
#include "exit_codes.h"
#include "options.h"
#include "qc_picture.h"
#include "text_file.h"

namespace autoreg::apps {
namespace {

namespace fs = std::filesystem;

struct SegmentParams {
  std::string atlases, target, out, model, out_probabilities, out_warped_dir, target_labels, qc;
  pipeline::SegmentOptions options;
  bool json = false;
};

// The atlases of a manifest (columns image,labels; a split column is ignored): every row
// needs both.
std::vector<pipeline::AtlasFiles> read_atlases(const std::string& path) {
  const io::Manifest m = io::read_manifest(path);
  std::vector<pipeline::AtlasFiles> atlases;
  for (const auto& row : m.rows) {
    const std::string where = path + ":" + std::to_string(row.line);
    if (row.image.empty() || row.labels.empty()) {
      throw io::IoError(where + ": an atlas needs an image and a label map (columns image,labels)");
    }
    atlases.push_back({row.image, row.labels, where});
  }
  if (atlases.empty()) throw io::IoError(path + ": no atlases listed (a header image,labels and one row per atlas)");
  return atlases;
}

nlohmann::json run(SegmentParams p) {
  const auto t0 = std::chrono::steady_clock::now();
  io::check_output(p.out);
  if (!p.qc.empty()) io::check_output(p.qc);
  const std::vector<pipeline::AtlasFiles> atlases = read_atlases(p.atlases);
  if (!p.model.empty()) p.options.pair.model = std::make_shared<registration::Model>(registration::load_model(p.model));
  if (p.options.pair.model && p.options.pair.inverse) check_invertible(*p.options.pair.model, p.model);
  const io::Volume target = io::read_volume(p.target);
  io::Volume truth;
  if (!p.target_labels.empty()) {
    truth = io::read_volume(p.target_labels, io::PixelKind::Labels);
    if (!io::same_grid(truth.geometry, target.geometry)) throw io::IoError(p.target_labels + ": not on the target's grid");
  }
  if (!p.out_probabilities.empty()) make_output_folder("--out-probabilities", p.out_probabilities);
  std::string warped_csv;
  if (!p.out_warped_dir.empty()) {
    make_output_folder("--out-warped-dir", p.out_warped_dir);
    warped_csv = "image,labels\n";
    p.options.on_atlas = [&](size_t i, const io::Volume& image, const io::Volume& labels,
                             const pipeline::PairResult* r, const io::Geometry& atlas_grid) {
      char prefix[32];
      std::snprintf(prefix, sizeof prefix, "atlas%02zu_", i + 1);
      const std::string name = prefix + file_stem(atlases[i].image);
      io::write_volume(p.out_warped_dir + "/" + name + ".nii.gz", image);
      io::write_volume(p.out_warped_dir + "/" + name + "_labels.nii.gz", labels);
      if (r && r->inverse.defined()) {
        io::write_displacement_field(p.out_warped_dir + "/" + name + "_inverse_field.nii.gz", r->inverse, atlas_grid);
      }
      warped_csv += name + ".nii.gz," + name + "_labels.nii.gz\n";
    };
  }
  p.options.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const pipeline::Segmentation s = pipeline::segment(target, atlases, p.options);
  io::write_volume(p.out, s.labels);
  if (!warped_csv.empty()) write_text_atomically(p.out_warped_dir + "/atlases.csv", warped_csv);
  if (!p.out_probabilities.empty()) {
    for (int64_t l : segmentation::label_values(s.atlases)) {
      const at::Tensor prob = segmentation::probability(s.fused, s.atlases, l);
      io::write_volume(p.out_probabilities + "/label_" + std::to_string(l) + ".nii.gz",
                       {prob.unsqueeze(0).unsqueeze(0), target.geometry});
    }
  }
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < atlases.size(); ++i) {
    nlohmann::json a = {{"image", atlases[i].image},
                        {"labels", atlases[i].labels},
                        {"seconds", s.reports[i].seconds},
                        {"non_positive_jacobian_percent", s.reports[i].folding_percent}};
    if (truth.data.defined()) a["dice"] = registration::mean_dice_over_reference(truth.data, s.atlases.labels[i]);
    list.push_back(a);
  }
  nlohmann::json fusion_stages = nlohmann::json::object();
  for (const auto& [name, seconds] : s.fused.stage_seconds) fusion_stages[name] = seconds;
  nlohmann::json out = {{"target", p.target},
                        {"out", p.out},
                        {"atlases", list},
                        {"fusion", segmentation::to_string(p.options.fusion.method)},
                        {"fusion_seconds", s.fusion_seconds},
                        {"fusion_stage_seconds", fusion_stages},
                        {"unanimous_percent", 100.0 * double(s.fused.unanimous) / double(s.fused.labels.numel())},
                        {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                        {"peak_memory_mib", pipeline::peak_resident_mib()},
                        {"threads", at::get_num_threads()},
                        {"model", p.model}};
  if (truth.data.defined()) out["dice"] = registration::mean_dice_over_reference(truth.data, s.labels.data);
  if (!p.qc.empty()) {
    // The fused labels outlined on the target, beside the mean of the warped atlases.
    const at::Tensor mean_atlas = at::stack(s.atlases.images).mean(0).unsqueeze(0).unsqueeze(0);
    char caption[512];
    std::snprintf(caption, sizeof caption, "%s   %zu atlases, %s fusion   Dice %s   %.1f s", file_stem(p.target).c_str(),
                  atlases.size(), out["fusion"].get<std::string>().c_str(),
                  out.contains("dice") ? std::to_string(out["dice"].get<double>()).substr(0, 5).c_str() : "n/a",
                  out["seconds"].get<double>());
    write_qc_picture(p.qc, {io::normalize_intensity(target.data), mean_atlas, s.labels.data, at::Tensor(),
                            target.geometry, "autoreg segment: " + file_stem(p.target) + " (right: the mean warped atlas)",
                            caption});
  }
  return out;
}

}  // namespace

int run_segment(int argc, char** argv) {
  TCLAP::CmdLine cmd("Multi-atlas segmentation: register every atlas (image + label map) onto the target, carry "
                     "its labels there and fuse them (majority vote, locally weighted vote, or joint label "
                     "fusion).", ' ', "0.1");
  TCLAP::ValueArg<std::string> atlases("", "atlases", "CSV manifest of the atlases: columns image,labels (paths relative to it)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> target("", "target", "the image to segment", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "the fused label map (on the target's grid)", true, "", "FILE", cmd);
  std::vector<std::string> methods = {"majority", "weighted", "jlf"}, devices = {"cpu", "cuda"};
  TCLAP::ValuesConstraint<std::string> method_allowed(methods), device_allowed(devices);
  TCLAP::ValueArg<std::string> fusion("", "fusion", "majority, weighted (locally weighted vote) or jlf (joint label fusion, default)", false, "jlf", &method_allowed, cmd);
  TCLAP::ValueArg<int> patch_radius("", "patch-radius", "weighted, jlf: patches of (2R+1)³ voxels (default 2)", false, 2, "R", cmd);
  TCLAP::ValueArg<int> search_radius("", "search-radius", "weighted, jlf: read each atlas where its patch best matches the target's within ±S voxels (local search, as ANTs' -s; default 3; 0: none)", false, 3, "S", cmd);
  TCLAP::SwitchArg no_patch_vote("", "no-patch-vote", "weighted, jlf: each voxel's weights vote for its own labels only (by default every patch votes for all of its voxels, as ANTs' joint fusion)", cmd, false);
  TCLAP::ValueArg<double> beta("", "beta", "jlf: exponent of the error correlations (default 2)", false, 2, "B", cmd);
  TCLAP::ValueArg<double> alpha("", "alpha", "jlf: added to the correlation matrix's diagonal (default 0.01)", false, 0.01, "A", cmd);
  TCLAP::ValueArg<double> power("", "power", "weighted: weight = (local mean squared difference)^-P (default 2)", false, 2, "P", cmd);
  TCLAP::ValueArg<std::string> model("", "model", "a trained model, or 'default'; without it, instance optimisation (as register)", false, "", "FILE", cmd);
  TCLAP::ValueArg<int> refine("", "refine", "with --model: instance optimisation steps refining the network's field", false, 0, "K", cmd);
  TCLAP::ValueArg<std::string> iterations("", "iterations", "instance optimisation Adam steps at 1/4 and 1/2 resolution (default 70,20)", false, "70,20", "N1,N2", cmd);
  TCLAP::SwitchArg registered("", "registered", "the atlases are on the target's grid already (registered by another run or tool): fuse only", cmd, false);
  TCLAP::ValueArg<std::string> out_probabilities("", "out-probabilities", "folder for each label's fused probability (label_<value>.nii.gz)", false, "", "DIR", cmd);
  TCLAP::ValueArg<std::string> out_warped_dir("", "out-warped-dir", "folder for every atlas's image and labels on the target's grid, with an atlases.csv that --registered reads", false, "", "DIR", cmd);
  TCLAP::SwitchArg out_inverse_fields("", "out-inverse-fields", "with --out-warped-dir: every atlas's inverse field there too (atlasNN_<name>_inverse_field.nii.gz, on the atlas's grid): the target carried onto the atlas", cmd, false);
  TCLAP::ValueArg<std::string> target_labels("", "target-labels", "the target's own label map: report every atlas's and the fusion's mean Dice", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> qc("", "qc", "a picture to check the result (PNG): the fused labels' outlines on the target, beside the mean of the warped atlases, in three orthogonal slices", false, "", "FILE.png", cmd);
  TCLAP::ValueArg<std::string> device("", "device", "cpu (default) or cuda", false, "cpu", &device_allowed, cmd);
  TCLAP::ValueArg<int> threads("", "threads", "CPU threads (default: all)", false, 0, "T", cmd);
  TCLAP::SwitchArg json("", "json", "print a JSON summary", cmd, false);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  SegmentParams p;
  p.atlases = atlases.getValue();
  p.target = target.getValue();
  p.out = out.getValue();
  p.out_probabilities = out_probabilities.getValue();
  p.out_warped_dir = out_warped_dir.getValue();
  p.target_labels = target_labels.getValue();
  p.qc = qc.getValue();
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  refuse_overwrite({&p.out, &p.qc}, {&p.target, &p.atlases, &p.target_labels});
  auto& o = p.options;
  o.fusion.method = segmentation::parse_method(fusion.getValue());
  if (patch_radius.getValue() < 0 || patch_radius.getValue() > 8) throw UsageError("--patch-radius must be 0-8");
  if (!(beta.getValue() > 0) || !(alpha.getValue() > 0) || !(power.getValue() > 0)) {
    throw UsageError("--beta, --alpha and --power must be positive");
  }
  o.fusion.patch_radius = patch_radius.getValue();
  if (search_radius.getValue() < 0 || search_radius.getValue() > 4) throw UsageError("--search-radius must be 0-4");
  o.fusion.search_radius = search_radius.getValue();
  o.fusion.patch_vote = !no_patch_vote.getValue();
  o.fusion.beta = beta.getValue();
  o.fusion.alpha = alpha.getValue();
  o.fusion.power = power.getValue();
  o.fusion.keep_weights = !p.out_probabilities.empty();
  o.registered = registered.getValue();
  o.pair.inverse = out_inverse_fields.getValue();
  if (o.pair.inverse && (p.out_warped_dir.empty() || o.registered)) {
    throw UsageError("--out-inverse-fields needs --out-warped-dir, and atlases to register (not --registered)");
  }
  if (o.registered && (!model.getValue().empty() || iterations.isSet())) {
    throw UsageError("--registered fuses atlases already on the target's grid: no --model or --iterations");
  }
  if (refine.getValue() < 0) throw UsageError("--refine must be >= 0");
  if (refine.getValue() > 0 && model.getValue().empty()) throw UsageError("--refine needs --model");
  if (iterations.isSet() && !model.getValue().empty()) {
    throw UsageError("--iterations sets instance optimisation, which --model replaces (use --refine K)");
  }
  const std::vector<int64_t> levels = parse_int_list("--iterations", iterations.getValue());
  if (levels.size() != 2 || levels[0] < 0 || levels[1] < 0) throw UsageError("--iterations: two counts >= 0, coarse level first");
  o.pair.deformable.iterations = levels;
  o.pair.refine = refine.getValue();
  o.pair.device = device.getValue();
  try {
    p.model = pipeline::resolve_model_name(model.getValue());
  } catch (const pipeline::NoDefaultModel& e) {
    throw UsageError(std::string("--model default: ") + e.what());
  }
  p.json = json.getValue();
  if (threads.getValue() > 0) at::set_num_threads(threads.getValue());
  const nlohmann::json summary = run(p);
  if (p.json) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf("wrote %s (%zu atlases, %s) in %.1f s", p.out.c_str(), summary["atlases"].size(),
                summary["fusion"].get<std::string>().c_str(), summary["seconds"].get<double>());
    if (summary.contains("dice")) std::printf("; mean Dice %.4f", summary["dice"].get<double>());
    std::printf("\n");
  }
  return kOk;
}

}  // namespace autoreg::apps
