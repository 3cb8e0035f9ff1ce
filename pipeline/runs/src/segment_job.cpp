#include "autoreg/base/atomic_file.h"
#include "autoreg/runs/segment_job.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/pair/contours_job.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/pair/qc_picture.h"
#include "autoreg/qc/picture.h"
#include "autoreg/registration/metrics.h"

namespace autoreg::pipeline {
namespace {

// The atlases of a manifest (columns image,labels; a split column is ignored): every row
// needs both.
std::vector<AtlasFiles> read_atlases(const std::string& path) {
  const io::Manifest m = io::read_manifest(path);
  std::vector<AtlasFiles> atlases;
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

// The fused labels as structures (their ROI numbers the labels), named by the table
// (only the labels it names) or "label N" in the QC picture's colours.
std::vector<StructureMask> label_structures(const at::Tensor& labels, const std::vector<rt::Roi>& table) {
  const at::Tensor flat = labels.to(at::kInt).contiguous().view({-1});
  std::vector<StructureMask> out;
  for (int64_t value : registration::labels_present(labels, labels)) {
    StructureMask s;
    auto named = std::find_if(table.begin(), table.end(), [&](const rt::Roi& r) { return r.number == value; });
    if (!table.empty() && named == table.end()) continue;
    if (named != table.end()) {
      s.roi = *named;
    } else {
      const qc::Rgb c = qc::label_colour(int32_t(value));
      s.roi.number = int(value);
      s.roi.name = "label " + std::to_string(value);
      s.roi.color = {c.r, c.g, c.b};
    }
    const at::Tensor inside = flat.eq(value).to(at::kByte).contiguous();
    s.mask.assign(inside.data_ptr<uint8_t>(), inside.data_ptr<uint8_t>() + inside.numel());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

nlohmann::json segment_files(SegmentJob p) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string* o : {&p.out, &p.qc, &p.out_contours}) {
    if (!o->empty()) io::check_output(*o);
  }
  const std::vector<rt::Roi> names = p.label_names.empty() ? std::vector<rt::Roi>() : read_label_table(p.label_names);
  const std::vector<AtlasFiles> atlases = read_atlases(p.atlases);
  if (p.out_inverse_fields) p.options.pair.inverse = true;
  if (!p.out_probabilities.empty()) p.options.fusion.keep_weights = true;
  if (p.options.pair.inverse) check_invertible(p.options.pair);
  const io::Volume target = io::read_volume(p.target);
  // The series the structures are written on, before any registration.
  const rt::DicomSeries series =
      p.out_contours.empty() ? rt::DicomSeries() : series_of_image(p.target, target.geometry, p.out_contours);
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
                             const PairResult* r, const io::Geometry& atlas_grid) {
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
  const Segmentation s = segment(target, atlases, p.options);
  if (!p.out.empty()) io::write_volume(p.out, s.labels);
  int contours = 0;
  if (!p.out_contours.empty()) {
    contours = write_structure_masks(p.out_contours, label_structures(s.labels.data, names), series,
                                     "Segmented by autoreg segment (multi-atlas, " +
                                         segmentation::to_string(p.options.fusion.method) + " fusion) from " + p.atlases + ".");
  }
  if (!warped_csv.empty()) base::write_file_atomically(p.out_warped_dir + "/atlases.csv", warped_csv);
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
                        {"peak_memory_mib", peak_resident_mib()},
                        {"threads", at::get_num_threads()},
                        {"model", p.options.pair.model_file}};
  if (truth.data.defined()) out["dice"] = registration::mean_dice_over_reference(truth.data, s.labels.data);
  if (!p.out_contours.empty()) out["contours"] = {{"written", p.out_contours}, {"contours", contours}};
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

}  // namespace autoreg::pipeline
