#include "autoreg/pair/register_job.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "autoreg/io/field.h"
#include "autoreg/io/points.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"
#include "autoreg/registration/metrics.h"
#include "autoreg/pair/option_values.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/pair/qc_picture.h"

namespace autoreg::pipeline {
namespace {

std::string describe(const io::Geometry& g) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%ld×%ld×%ld voxels of %.3g×%.3g×%.3g mm, origin (%.1f, %.1f, %.1f)",
                long(g.size[0]), long(g.size[1]), long(g.size[2]), g.spacing[0], g.spacing[1],
                g.spacing[2], g.origin[0], g.origin[1], g.origin[2]);
  return buf;
}

// A label map (or mask) on its image's grid: as it is when it is on that grid; otherwise
// an error, or with --force a nearest-neighbour resampling (with a warning).
io::Volume labels_on_grid(const RegisterJob& p, const std::string& file, const std::string& image,
                          const io::Geometry& image_grid) {
  io::Volume labels = io::read_volume(file, io::PixelKind::Labels);
  if (io::same_grid(labels.geometry, image_grid)) return labels;
  const std::string what = file + ": not on the grid of its image " + image + " (" +
                           describe(labels.geometry) + " against " + describe(image_grid) + ")";
  if (!p.force) throw io::IoError(what + "; rerun with --force to resample it by nearest neighbour");
  std::fprintf(stderr, "warning: %s; resampling it by nearest neighbour (--force)\n", what.c_str());
  return io::resample(labels, image_grid, io::Resampling::Nearest);
}

// A warning when the two volumes' physical extents differ by more than 2× along an
// axis (sorted, so that orientation does not matter): a wrong header spacing, or not
// the same anatomy.
void warn_on_extents(const RegisterJob& p, const io::Geometry& f, const io::Geometry& m) {
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

// A warning when the two volumes have the same voxel grid but not the same spacing (by
// more than 1 % along an axis): frames of one acquisition whose headers disagree (the
// liver set's dataset18 cyc_1_10 says 5 mm slices where its master and its landmarks say
// 4 mm; registered as it is, the frame is a stretched copy of itself).
void warn_on_spacing(const RegisterJob& p, const io::Geometry& f, const io::Geometry& m) {
  if (f.size != m.size) return;
  for (int a = 0; a < 3; ++a) {
    if (std::abs(f.spacing[a] - m.spacing[a]) <= 0.01 * std::max(f.spacing[a], m.spacing[a])) continue;
    std::fprintf(stderr,
                 "warning: %s and %s have the same grid (%lld×%lld×%lld voxels) but different spacing "
                 "(%g×%g×%g and %g×%g×%g mm); if they come from one acquisition, one header is wrong\n",
                 p.fixed.c_str(), p.moving.c_str(), (long long)f.size[0], (long long)f.size[1], (long long)f.size[2],
                 f.spacing[0], f.spacing[1], f.spacing[2], m.spacing[0], m.spacing[1], m.spacing[2]);
    return;
  }
}

// Writes the outputs; if one fails, removes those already written by this run.
class Outputs {
 public:
  // An output not asked for (an empty name) is skipped: a registration may write only
  // the warped image, only the labels, only the field or nothing but its summary.
  template <typename Write>
  void write(const std::string& path, Write&& write) {
    if (path.empty()) return;
    try {
      write();
      written_.push_back(path);
    } catch (...) {
      std::error_code ec;
      for (const auto& w : written_) std::filesystem::remove_all(w, ec);  // a DICOM series is a folder
      throw;
    }
  }

 private:
  std::vector<std::string> written_;
};

// How the pair was registered, for captions.
std::string method_name(const RegisterJob& p) {
  if (p.options.stages == Stages::AffineOnly) return "affine only";
  if (p.options.model) {
    return "model " + file_stem(p.options.model_file) + (p.options.refine > 0 ? " + " + std::to_string(p.options.refine) + " refine steps" : "");
  }
  return "instance optimisation";
}

// The median and 95th percentile of a per-voxel error over the voxels of `mask`.
std::pair<double, double> median_and_p95(const at::Tensor& error, const at::Tensor& mask) {
  const at::Tensor inside = error.masked_select(mask).to(at::kDouble);
  if (inside.numel() == 0) return {std::nan(""), std::nan("")};
  const at::Tensor sorted = std::get<0>(inside.sort());
  const auto at_fraction = [&](double q) {
    return sorted[std::min<int64_t>(sorted.numel() - 1, int64_t(q * double(sorted.numel())))].item<double>();
  };
  return {at_fraction(0.5), at_fraction(0.95)};
}

// How well the inverse undoes the forward map: the round trip's error in mm inside the
// fixed image's brain (its labels > 0 when given, else voxels above 10 % of its robust
// range), and with both label maps the fixed labels carried onto the moving grid by the
// inverse, scored against the moving labels.
nlohmann::json inverse_summary(const PairInputs& in, const PairResult& r, const at::Tensor& warped) {
  const at::Tensor error = io::round_trip_error_mm(in.fixed.geometry, r.displacement, in.moving.geometry, r.inverse);
  // (the fixed voxels were handed to the registration: without labels, the mask is the
  // warped moving image's foreground on the fixed grid)
  at::Tensor mask;
  std::string where;
  if (in.fixed_labels.data.defined()) {
    mask = in.fixed_labels.data > 0;
    where = "fixed labels > 0";
  } else {
    mask = io::normalize_intensity(warped, 0.5, 99.5) > 0.1;
    where = "warped moving image above 10 % of its range";
  }
  const auto [median, p95] = median_and_p95(error, mask);
  nlohmann::json j = {{"residual_mm_median", median}, {"residual_mm_p95", p95}, {"residual_where", where}};
  if (in.fixed_labels.data.defined() && in.moving_labels.data.defined()) {
    const at::Tensor back = io::sample_mapped(in.fixed_labels, in.moving.geometry, at::Tensor(), r.inverse);
    j["dice"] = registration::mean_dice_over_reference(in.moving_labels.data, back);
  }
  return j;
}

// What --padding found in each image: the value and the percentage of its grid outside
// the field of view (null: nothing outside).
nlohmann::json padding_summary(const PairOptions& o, const PairResult& r) {
  const auto found = [](const PairResult::FieldOfView& f) {
    if (!f.padding) return nlohmann::json();
    return nlohmann::json{{"value", *f.padding}, {"outside_percent", 100.0 * f.outside_fraction}};
  };
  const auto gas = [](const PairResult::FieldOfView& f) {
    if (!f.gas_threshold) return nlohmann::json();
    return nlohmann::json{{"below", *f.gas_threshold}, {"percent", 100.0 * f.gas_fraction}};
  };
  nlohmann::json j{{"rule", padding_text(o.padding)}, {"fixed", found(r.fixed_fov)}, {"moving", found(r.moving_fov)}};
  if (o.exclude_gas) j["gas"] = {{"fixed", gas(r.fixed_fov)}, {"moving", gas(r.moving_fov)}};
  return j;
}

// A row's value as the record holds it: typed by its kind; unset ("") is null.
nlohmann::json record_value(const SettingRow& row, const std::string& text) {
  if (text.empty()) return nullptr;
  switch (row.kind) {
    case SettingKind::Number: return std::stod(text);
    case SettingKind::Whole: return std::stoull(text);
    case SettingKind::Boolean: return text == "true";
    case SettingKind::Numbers: {
      // Whole numbers as integers when written so ("70,20"), else as numbers ("-1000.5,400").
      const bool whole = text.find_first_of(".eE") == std::string::npos;
      nlohmann::json list = nlohmann::json::array();
      for (double v : parse_number_list("--" + row.option, text)) {
        if (whole) {
          list.push_back(int64_t(v));
        } else {
          list.push_back(v);
        }
      }
      return list;
    }
    case SettingKind::Text: break;
  }
  return text;
}

// What the registration was set to do, for the summary: the settings of the table as given
// (the preset's, overridden by the options), except three recorded as what the run made of
// them: the deformable stage it ran, the levels it stepped (a model's refinement) and the
// fields of view found (`padding`); and the pre-alignment it ran and how the intensities
// were normalised.
nlohmann::json settings_summary(const PairOptions& o, const PairResult& r) {
  nlohmann::json s;
  for (const SettingRow& row : setting_rows()) {
    if (row.keyword != "deformable" && row.keyword != "iterations" && row.keyword != "padding") {
      s[row.keyword] = record_value(row, row.get(o.settings));
    }
  }
  const auto intensity = [](const PairResult::Intensity& i) { return nlohmann::json{{"rule", i.rule}, {"lo", i.lo}, {"hi", i.hi}}; };
  const bool pre = o.stages != Stages::DeformableOnly, deformable = o.stages != Stages::AffineOnly;
  s["pre_alignment"] = !pre ? "none" : o.affine.rigid ? "rigid" : "affine";
  s["deformable"] = !deformable ? "none" : o.model ? "model" : "instance optimisation";
  s["iterations"] = deformable ? nlohmann::json(deformable_levels(o)) : nlohmann::json::array();
  s["intensity"] = {{"fixed", intensity(r.fixed_intensity)}, {"moving", intensity(r.moving_intensity)}};
  s["padding"] = padding_summary(o, r);
  return s;
}

// The affine stage's own check: its loss and the headers' on the same points, and which
// it kept (null without the stage).
nlohmann::json affine_check_summary(const PairResult& r) {
  if (!r.affine_report) return nullptr;
  const registration::AffineReport& a = *r.affine_report;
  const PairResult::AffineJudgement& j = r.affine_judgement;
  return {{"loss_fitted", a.fitted_loss},
          {"loss_headers", a.headers_loss},
          {"local_loss_headers", r.loss_before},
          {"judged", {{"similarity", registration::similarity_name(r.options.deformable.similarity)},
                      {"edge_margin_mm", j.edge_margin_mm},
                      {"on", j.edge_margin_mm > 0 ? "what both show, the margin or more inside the fields of view's edges"
                                                  : "what both show"},
                      {"loss_headers", finite_or_null(j.loss_headers)},
                      {"loss_fitted", finite_or_null(j.loss_fitted)},
                      {"least_gain", kAffineGain}}},
          {"kept", r.affine_dropped ? "headers" : "fitted"}};
}

// The second opinion's evidence (pair_checks.h: second_opinion).
nlohmann::json second_opinion_summary(const PairResult& r) {
  const PairResult::SecondOpinion& mi = r.mutual_information;
  return {{"measure", "normalised mutual information"},
          {"bins", kMutualInformationBins},
          {"edge_margin_mm", mi.margin_mm},
          {"before", finite_or_null(mi.before)},
          {"after", finite_or_null(mi.after)},
          {"least_kept", 1 - kSecondOpinionDrop}};
}

}  // namespace

PairInputs read_pair_inputs(const RegisterJob& p) {
  PairInputs in;
  in.fixed = io::read_volume(p.fixed);
  in.moving = io::read_volume(p.moving);
  if (!p.moving_labels.empty()) in.moving_labels = labels_on_grid(p, p.moving_labels, p.moving, in.moving.geometry);
  const auto mask = [&](const std::string& file, const std::string& image, const io::Geometry& grid) {
    return file.empty() ? at::Tensor() : binary_mask(labels_on_grid(p, file, image, grid).data, file);
  };
  in.masks = {mask(p.fixed_mask, p.fixed, in.fixed.geometry), mask(p.moving_mask, p.moving, in.moving.geometry)};
  if (!p.fixed_labels.empty()) {
    in.fixed_labels = io::read_volume(p.fixed_labels, io::PixelKind::Labels);
    if (!io::same_grid(in.fixed_labels.geometry, in.fixed.geometry)) {
      throw io::IoError(p.fixed_labels + ": not on the grid of its image " + p.fixed + " (" +
                        describe(in.fixed_labels.geometry) + " against " + describe(in.fixed.geometry) + ")");
    }
  }
  if (p.fixed_points.empty() != p.moving_points.empty()) {
    throw io::IoError((p.fixed_points.empty() ? p.moving_points : p.fixed_points) + ": landmarks need their match in the other image");
  }
  if (!p.fixed_points.empty()) in.landmarks = io::read_landmarks(p.fixed_points, p.moving_points);
  if (!p.fixed_orientation.empty()) {
    in.fixed.geometry = io::with_orientation(in.fixed.geometry, p.fixed_orientation);
    in.fixed_labels.geometry = in.fixed.geometry;
  }
  if (!p.moving_orientation.empty()) {
    in.moving.geometry = io::with_orientation(in.moving.geometry, p.moving_orientation);
    in.moving_labels.geometry = in.moving.geometry;
  }
  if (!p.moving_contours.empty() || !p.fixed_contours.empty() || names_dicom_folder(p.out_warped)) {
    if (!p.fixed_orientation.empty() || !p.moving_orientation.empty()) {
      throw io::IoError((p.moving_contours.empty() ? (p.fixed_contours.empty() ? p.out_warped : p.fixed_contours)
                                                   : p.moving_contours) +
                        ": contours and DICOM outputs lie in the series' own frame of reference; an orientation "
                        "override would move the image away from them");
    }
    in.contours = read_pair_contours(p, in.moving.geometry, in.fixed.geometry);
  }
  warn_on_spacing(p, in.fixed.geometry, in.moving.geometry);
  warn_on_extents(p, in.fixed.geometry, in.moving.geometry);
  return in;
}

PairOutputs register_in_memory(RegisterJob& p, PairInputs& in, StageTimes& times) {
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
  if (!p.options.affine.progress) p.options.affine.progress = progress("affine", p.options.affine.iterations);
  if (!p.options.deformable.progress) {
    p.options.deformable.progress = progress(p.options.model ? "refine" : "deformable", deformable_levels(p.options));
  }
  // The fixed voxels are handed over (only its grid is needed after); the moving ones are
  // kept for the warped output.
  PairOutputs out;
  out.result = register_pair({std::move(in.fixed.data), in.fixed.geometry}, in.moving, p.options, &times, in.masks);
  c10::AutoGradMode no_grad(false);
  out.warped = {io::sample_mapped(in.moving, in.fixed.geometry, at::Tensor(), out.result.displacement), in.fixed.geometry};
  if (in.moving_labels.data.defined()) {
    out.warped_labels = {io::sample_mapped(in.moving_labels, in.fixed.geometry, at::Tensor(), out.result.displacement),
                         in.fixed.geometry};
  }
  times.lap("warp");
  return out;
}

PairMetrics pair_metrics(const RegisterJob& p, const PairInputs& in, const PairOutputs& out, StageTimes& times) {
  c10::AutoGradMode no_grad(false);
  const PairResult& r = out.result;
  PairMetrics m;
  if (r.inverse.defined()) m.inverse = inverse_summary(in, r, out.warped.data);
  m.jacobian = registration::jacobian_stats(r.displacement);
  times.lap("jacobian");
  m.warnings = check_pair(r.options, r, m.jacobian.non_positive_percent);
  if (in.fixed_labels.data.defined() && out.warped_labels.data.defined()) {
    m.dice = registration::mean_dice_over_reference(in.fixed_labels.data, out.warped_labels.data);
  }
  if (!in.landmarks.fixed.points.empty()) {  // the landmarks' error before and after, mm
    const auto& [fixed_points, moving_points] = in.landmarks;
    const io::PointErrors before = io::point_errors(fixed_points.points, moving_points.points);
    const io::PointErrors after = io::point_errors(
        io::displace_points(fixed_points.points, r.displacement, in.fixed.geometry, p.fixed_points), moving_points.points);
    m.tre = {{"points", after.distances.size()}, {"before_mean_mm", before.mean}, {"mean_mm", after.mean},
             {"median_mm", after.median}, {"p95_mm", after.p95}, {"max_mm", after.max}};
  }
  return m;
}

nlohmann::json pair_summary(const RegisterJob& p, const PairOutputs& out, const PairMetrics& m, const StageTimes& times) {
  const PairResult& r = out.result;
  nlohmann::json stages = nlohmann::json::object();
  double seconds = 0;
  for (const auto& [stage, s] : times.seconds()) {
    stages[stage] = s;
    seconds += s;
  }
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
          {"seconds", seconds},
          {"stage_seconds", stages},
          {"stage_peak_memory_mib", stage_peaks},
          {"peak_memory_mib", peak_resident_mib()},
          {"threads", at::get_num_threads()},
          {"device", p.options.device},
          {"model", p.options.model_file},
          {"non_positive_jacobian_percent", m.jacobian.non_positive_percent},
          {"log_jacobian_std", m.jacobian.log_std},
          {"dice", std::isfinite(m.dice) ? nlohmann::json(m.dice) : nlohmann::json()},
          {"tre_mm", m.tre.is_null() ? nlohmann::json() : m.tre["mean_mm"]},
          {"tre", m.tre},
          {"inverse", m.inverse},
          {"affine_check", affine_check_summary(r)},
          {"similarity_check", {{"loss_before", finite_or_null(r.loss_before)}, {"loss_after", finite_or_null(r.loss_after)}}},
          {"second_opinion", second_opinion_summary(r)},
          {"warnings", warnings_json(m.warnings)},
          {"preset_choice", choice_json(r.preset)},
          {"settings", settings_summary(r.options, r)}};
}

nlohmann::json register_inputs(RegisterJob p, PairInputs in, StageTimes& times) {
  p.options.inverse = !p.out_inverse_field.empty();
  const at::Tensor fixed_voxels = p.qc.empty() ? at::Tensor() : in.fixed.data;  // kept for the picture
  const PairOutputs out = register_in_memory(p, in, times);
  const PairResult& r = out.result;
  // The structures carried onto the fixed series (with --moving-contours).
  CarriedContours carried;
  nlohmann::json contours;
  if (in.contours.carried()) {
    // --out-labels without --moving-labels: the structures as a label map.
    carried = carry_contours(in.contours, in.moving.geometry, in.fixed.geometry, r.displacement,
                             !p.out_labels.empty() && p.moving_labels.empty());
    contours = {{"moving", in.contours.moving_file}, {"structures", carried.summary}};
    if (!in.contours.fixed_file.empty()) contours["fixed"] = in.contours.fixed_file;
    if (!p.out_contours.empty()) contours["written"] = p.out_contours;
    times.lap("contours");
  }
  Outputs outputs;
  outputs.write(p.out_warped, [&] {
    if (names_dicom_folder(p.out_warped)) {
      write_warped_series(p.out_warped, out.warped, in.contours, p.moving);
    } else {
      io::write_volume(p.out_warped, out.warped);
    }
  });
  outputs.write(p.out_field, [&] { io::write_displacement_field(p.out_field, r.displacement, in.fixed.geometry); });
  if (!p.out_labels.empty() && carried.labels.defined()) {
    outputs.write(p.out_labels, [&] { io::write_volume(p.out_labels, {carried.labels, in.fixed.geometry}); });
    const std::string table = label_table_path(p.out_labels);
    outputs.write(table, [&] { write_label_table(table, carried); });
    contours["labels"] = p.out_labels;
    contours["label_table"] = table;
  } else if (!p.out_labels.empty()) {
    outputs.write(p.out_labels, [&] { io::write_volume(p.out_labels, out.warped_labels); });
  }
  if (!p.out_affine.empty()) {
    outputs.write(p.out_affine, [&] { io::write_affine(p.out_affine, r.affine); });
  }
  if (!p.out_contours.empty()) {
    outputs.write(p.out_contours, [&] { write_carried_contours(p.out_contours, in.contours, carried); });
  }
  if (r.inverse.defined()) {
    outputs.write(p.out_inverse_field,
                  [&] { io::write_displacement_field(p.out_inverse_field, r.inverse, in.moving.geometry); });
  }
  times.lap("write");
  const PairMetrics m = pair_metrics(p, in, out, times);
  if (!p.qc.empty()) {
    char caption[512];
    std::snprintf(caption, sizeof caption, "%s -> %s   %s   Dice %s   folding %.3f %%   log|J| sd %.3f",
                  file_stem(p.moving).c_str(), file_stem(p.fixed).c_str(),
                  method_name(p).c_str(),
                  std::isfinite(m.dice) ? std::to_string(m.dice).substr(0, 5).c_str() : "n/a",
                  m.jacobian.non_positive_percent, m.jacobian.log_std);
    outputs.write(p.qc, [&] {
      // The labels outlined: the warped label map, or the carried structures (--moving-contours).
      const at::Tensor labels = out.warped_labels.data.defined() ? out.warped_labels.data : carried.labels;
      QcVolumes picture{fixed_voxels, out.warped.data, labels, r.displacement, in.fixed.geometry,
                        "autoreg register: " + file_stem(p.moving) + " onto " + file_stem(p.fixed), caption,
                        warnings_line(m.warnings)};
      set_scan_views(picture, r, fixed_voxels, in.moving);
      write_qc_picture(p.qc, picture);
    });
    times.lap("qc");
  }
  nlohmann::json summary = pair_summary(p, out, m, times);
  if (!contours.is_null()) summary["contours"] = std::move(contours);
  return summary;
}

nlohmann::json register_files(const RegisterJob& job, StageTimes& times) {
  for (const std::string* out : {&job.out_warped, &job.out_field, &job.out_labels, &job.out_affine,
                                 &job.out_inverse_field, &job.qc, &job.out_contours}) {
    if (out->empty()) continue;
    if (out == &job.out_warped && names_dicom_folder(job.out_warped)) {
      check_dicom_output(job.out_warped);
    } else {
      io::check_output(*out);
    }
  }
  if (!job.out_inverse_field.empty()) check_invertible(job.options);
  PairInputs in = read_pair_inputs(job);
  times.lap("read");
  return register_inputs(job, std::move(in), times);
}

}  // namespace autoreg::pipeline
