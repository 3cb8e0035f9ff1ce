#include "autoreg/pipeline/template_job.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "autoreg/base/atomic_file.h"
#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/mapped.h"
#include "autoreg/ops.h"
#include "autoreg/pipeline/output_files.h"
#include "autoreg/pipeline/qc_picture.h"
#include "autoreg/pipeline/register_pair.h"
#include "autoreg/qc/template_report.h"
#include "autoreg/segmentation/fusion.h"

namespace autoreg::pipeline {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Subject {
  std::string image, labels, name;
  io::Volume volume;  // intensities normalised to [0, 1]
};

// The subjects of the manifest, read and normalised; names from their image files
// (made unique with _2, _3, ...).
std::vector<Subject> read_subjects(const TemplateSettings& s, const PairOptions& o) {
  const auto rows = io::read_csv(s.images, {"image", "labels"}, {"image"}, "image list");
  if (rows.size() < 2) {
    throw io::IoError(s.images + ": a template needs at least two subjects, the list has " + std::to_string(rows.size()));
  }
  std::vector<Subject> out;
  std::map<std::string, int> seen;
  for (const auto& row : rows) {
    Subject subject;
    subject.image = io::path_beside(s.images, row.fields[0]);
    subject.labels = io::path_beside(s.images, row.fields[1]);
    if (subject.image.empty()) throw io::IoError(s.images + ":" + std::to_string(row.line) + ": a row without an image");
    subject.name = file_stem(subject.image);
    if (const int n = ++seen[subject.name]; n > 1) subject.name += "_" + std::to_string(n);
    io::Volume v = io::read_volume(subject.image);
    PairResult::Intensity how;
    v.data = normalise_intensities(v.data, at::Tensor(), o, {0.5, 99.5}, &how);
    subject.volume = std::move(v);
    out.push_back(std::move(subject));
  }
  return out;
}

// The average of the warped subjects (each 1×1×D×H×W).
at::Tensor average(const std::vector<at::Tensor>& warped, const std::string& how) {
  const at::Tensor stack = at::cat(warped, 0);
  if (how == "median") return std::get<0>(stack.median(0, /*keepdim=*/true));
  const at::Tensor mean = stack.mean(0, /*keepdim=*/true);
  if (how == "mean") return mean;
  // sharpened: an unsharp mask, the mean plus half its difference from its 3³ box average
  const at::Tensor blurred = at::avg_pool3d(mean, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, false);
  return (mean + 0.5 * (mean - blurred)).clamp(0, 1);
}

// Pearson correlation of two volumes over `mask`.
double correlation(const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask) {
  const at::Tensor x = a.masked_select(mask).to(at::kDouble), y = b.masked_select(mask).to(at::kDouble);
  const at::Tensor dx = x - x.mean(), dy = y - y.mean();
  const double den = std::sqrt((dx * dx).sum().item<double>() * (dy * dy).sum().item<double>());
  return den > 0 ? (dx * dy).sum().item<double>() / den : 0.0;
}

struct Round {
  std::vector<PairResult> results;
  std::vector<at::Tensor> warped;  // each subject on the template grid
};

// Every subject registered to the template (fixed), as `autoreg register` does.
Round register_all(const io::Volume& templ, const std::vector<Subject>& subjects, PairOptions o, bool inverse,
                   const std::string& stage, const TemplateSettings& s) {
  o.inverse = inverse;
  Round round;
  const at::Tensor foreground = templ.data > 0.1;
  const double inside = std::max<double>(1, foreground.sum().item<double>());
  for (size_t i = 0; i < subjects.size(); ++i) {
    const auto start = Clock::now();
    const Subject& subject = subjects[i];
    PairResult r = register_pair({templ.data.clone(), templ.geometry}, subject.volume, o);
    c10::AutoGradMode no_grad(false);
    round.warped.push_back(io::sample_mapped(subject.volume, templ.geometry, at::Tensor(), r.displacement));
    // How much of the template's foreground the subject covers after registration.
    const io::Volume ones{at::ones_like(subject.volume.data), subject.volume.geometry};
    const at::Tensor covered = io::sample_mapped(ones, templ.geometry, at::Tensor(), r.displacement) > 0.5;
    const double fraction = (covered & foreground).sum().item<double>() / inside;
    if (fraction < 0.5) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.0f %%", 100 * fraction);
      throw io::IoError(subject.image + ": after registration it covers only " + pct +
                        " of the template's foreground; check that it shows the same anatomy and field of view");
    }
    round.results.push_back(std::move(r));
    if (s.log) {
      char line[512];
      std::snprintf(line, sizeof line, "template: %s, subject %zu/%zu (%s) %.1f s", stage.c_str(), i + 1,
                    subjects.size(), subject.name.c_str(), since(start));
      s.log(line);
    }
  }
  return round;
}

std::string iteration_file(const TemplateSettings& s, int t, const char* ext) {
  return (fs::path(s.out) / "iterations" / ("template_" + std::to_string(t) + ext)).string();
}

// The template before the first update.
io::Volume initial_template(const TemplateSettings& s, const std::vector<Subject>& subjects, const PairOptions& o) {
  if (s.initial == "first") return subjects[0].volume;
  if (s.initial != "affine-mean") {
    io::Volume v = io::read_volume(s.initial);
    PairResult::Intensity how;
    v.data = normalise_intensities(v.data, at::Tensor(), o, {0.5, 99.5}, &how);
    return v;
  }
  PairOptions affine = o;
  affine.stages = Stages::AffineOnly;
  affine.model.reset();
  affine.refine = 0;
  const Round round = register_all(subjects[0].volume, subjects, affine, false, "affine mean", s);
  return {average(round.warped, "mean"), subjects[0].volume.geometry};
}

// How the average moves to become the next template (Avants et al. 2010): the subjects'
// maps x ↦ A_s(x + u_s(x)) have the mean affine Ā and, beyond it, the mean deformation r
// (the mean whole displacement less Ā's); the template takes the inverse of Ā whole and
// of r by `step`: the next template at y is the average at Ā⁻¹(y − step · r(y)).
struct Update {
  at::Tensor update;             // 1×3×D×H×W voxels of the template grid: where the average is read
  at::Tensor mean_displacement;  // the subjects' mean whole displacement (voxels): 0 when unbiased
};

Update shape_update(const Round& round, const io::Geometry& grid, double step) {
  at::Tensor sum = at::zeros_like(round.results[0].displacement);
  at::Tensor affine = at::zeros({4, 4}, at::kDouble);
  for (const PairResult& r : round.results) {
    sum += r.displacement;
    affine += r.affine;
  }
  const double n = double(round.results.size());
  Update u;
  u.mean_displacement = sum / n;
  const at::Tensor mean_affine = affine / n;
  const at::Tensor of_affine = io::compose_affine(grid, mean_affine, at::zeros_like(sum));
  u.update = io::compose_affine(grid, at::inverse(mean_affine), -step * (u.mean_displacement - of_affine));
  return u;
}

// The iteration's line of the log (template.log.jsonl).
nlohmann::json iteration_record(int t, const io::Volume& old_t, const Update& u, const Round& round,
                                const std::vector<Subject>& subjects, double seconds) {
  const at::Tensor mask = old_t.data > 0.1;
  const auto mm = [&](const at::Tensor& field) {
    return io::physical_field(field, old_t.geometry).pow(2).sum(1, true).sqrt();
  };
  const at::Tensor update_mm = mm(u.update), bias_mm = mm(u.mean_displacement);
  nlohmann::json fits = nlohmann::json::object();
  double sum = 0;
  for (size_t i = 0; i < subjects.size(); ++i) {
    const double c = correlation(round.warped[i], old_t.data, mask);
    fits[subjects[i].name] = c;
    sum += c;
  }
  return {{"iteration", t},
          {"update_mm", update_mm.masked_select(mask).mean().item<double>()},
          {"update_max_mm", update_mm.max().item<double>()},
          {"mean_displacement_mm", bias_mm.masked_select(mask).mean().item<double>()},
          {"similarity", sum / double(subjects.size())},
          {"subjects", fits},
          {"seconds", seconds},
          {"template", "iterations/template_" + std::to_string(t) + ".nii.gz"},
          {"picture", "iterations/template_" + std::to_string(t) + ".png"}};
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  base::write_file_atomically(path, j.dump(2) + "\n");
}

// The iterations already done (resume): their log lines, and the last one's number.
std::vector<nlohmann::json> done_iterations(const TemplateSettings& s) {
  std::vector<nlohmann::json> lines;
  const fs::path state = fs::path(s.out) / "state.json";
  if (!s.resume || !fs::exists(state)) return lines;
  std::ifstream in(state);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("iterations")) throw io::IoError(state.string() + ": not a template state file");
  for (const auto& line : j["iterations"]) lines.push_back(line);
  return lines;
}

void write_outputs(const TemplateSettings& s, const io::Volume& templ, const std::vector<Subject>& subjects,
                   const Round& final_round, nlohmann::json& summary) {
  const fs::path out(s.out);
  io::write_volume((out / "template.nii.gz").string(), templ);
  segmentation::Atlases atlases;
  bool all_labels = true;
  for (size_t i = 0; i < subjects.size(); ++i) {
    const Subject& subject = subjects[i];
    const PairResult& r = final_round.results[i];
    io::write_displacement_field((out / (subject.name + "_field.nii.gz")).string(), r.displacement, templ.geometry);
    io::write_displacement_field((out / (subject.name + "_inverse.nii.gz")).string(), r.inverse, subject.volume.geometry);
    io::write_volume((out / (subject.name + "_warped.nii.gz")).string(), {final_round.warped[i], templ.geometry});
    if (subject.labels.empty()) {
      all_labels = false;
      continue;
    }
    io::Volume labels = io::read_volume(subject.labels, io::PixelKind::Labels);
    if (!io::same_grid(labels.geometry, subject.volume.geometry)) {
      throw io::IoError(subject.labels + ": not on the grid of its image " + subject.image);
    }
    c10::AutoGradMode no_grad(false);
    const at::Tensor warped = io::sample_mapped(labels, templ.geometry, at::Tensor(), r.displacement);
    io::write_volume((out / (subject.name + "_warped_labels.nii.gz")).string(), {warped, templ.geometry});
    atlases.images.push_back(final_round.warped[i][0][0]);
    atlases.labels.push_back(warped[0][0]);
  }
  if (all_labels) {
    const auto fused = segmentation::fuse(templ.data[0][0], atlases);
    io::write_volume((out / "template_labels.nii.gz").string(), {fused.labels.unsqueeze(0).unsqueeze(0), templ.geometry});
    summary["template_labels"] = "template_labels.nii.gz";
  }
}

}  // namespace

void validate(const TemplateSettings& s) {
  if (s.images.empty()) throw SettingsError("--images is required: a CSV with a column image (and optionally labels)");
  if (s.out.empty()) throw SettingsError("--out is required: the output folder");
  if (s.iterations < 0 || s.iterations > 100) throw SettingsError("--template-iterations must be between 0 and 100");
  if (!(s.step > 0 && s.step <= 1)) throw SettingsError("--step must be in (0, 1]");
  if (s.averaging != "mean" && s.averaging != "median" && s.averaging != "sharpened") {
    throw SettingsError("--averaging must be mean, median or sharpened, got '" + s.averaging + "'");
  }
  if (!s.registration.deformable) throw SettingsError("a template needs the deformable stage");
  validate(s.registration);
}

nlohmann::json build_template(const TemplateSettings& s) {
  validate(s);
  const auto start = Clock::now();
  make_output_folder("--out", s.out);
  make_output_folder("--out", (fs::path(s.out) / "iterations").string());
  const PairOptions o = pair_options(s.registration);
  const std::vector<Subject> subjects = read_subjects(s, o);
  std::vector<nlohmann::json> iterations = done_iterations(s);
  io::Volume templ;
  if (iterations.empty()) {
    templ = initial_template(s, subjects, o);
    io::write_volume(iteration_file(s, 0, ".nii.gz"), templ);
  } else {
    templ = io::read_volume(iteration_file(s, int(iterations.size()), ".nii.gz"));
    if (s.log) s.log("template: resuming after iteration " + std::to_string(iterations.size()));
  }
  for (int t = int(iterations.size()) + 1; t <= s.iterations; ++t) {
    const auto begun = Clock::now();
    const Round round = register_all(templ, subjects, o, false, "iteration " + std::to_string(t) + "/" + std::to_string(s.iterations), s);
    c10::AutoGradMode no_grad(false);
    const Update u = shape_update(round, templ.geometry, s.step);
    const io::Volume next{ops::warp(average(round.warped, s.averaging), u.update, ops::Interpolation::Linear, ops::Padding::Border),
                          templ.geometry};
    io::write_volume(iteration_file(s, t, ".nii.gz"), next);
    write_qc_picture(iteration_file(s, t, ".png"),
                     {next.data, templ.data, at::Tensor(), u.update, templ.geometry,
                      "autoreg template: iteration " + std::to_string(t) + " (fixed: the new template; warped: the one before)",
                      "shape update: the mean affine inverted, and the mean deformation x " + std::to_string(s.step).substr(0, 4) + " backwards"});
    iterations.push_back(iteration_record(t, templ, u, round, subjects, since(begun)));
    const nlohmann::json& line = iterations.back();
    write_json_file((fs::path(s.out) / "state.json").string(), {{"iterations", iterations}});
    std::string log_text;
    for (const auto& l : iterations) log_text += l.dump() + "\n";
    base::write_file_atomically((fs::path(s.out) / "template.log.jsonl").string(), log_text);
    if (s.log) {
      char text[256];
      std::snprintf(text, sizeof text, "template: iteration %d/%d: shape update %.3f mm, similarity %.4f, %.0f s", t,
                    s.iterations, line["update_mm"].get<double>(), line["similarity"].get<double>(), line["seconds"].get<double>());
      s.log(text);
    }
    templ = next;
    if (s.after_checkpoint) s.after_checkpoint(t);
  }
  const Round final_round = register_all(templ, subjects, o, true, "final registrations", s);
  nlohmann::json summary = {{"subjects", subjects.size()}, {"iterations", iterations}, {"template", "template.nii.gz"},
                            {"settings", {{"initial", s.initial}, {"step", s.step}, {"averaging", s.averaging},
                                          {"preset", s.registration.preset}, {"model", s.registration.model},
                                          {"similarity", s.registration.similarity}}}};
  write_outputs(s, templ, subjects, final_round, summary);
  const at::Tensor mask = templ.data > 0.1;
  nlohmann::json fits = nlohmann::json::object();
  for (size_t i = 0; i < subjects.size(); ++i) fits[subjects[i].name] = correlation(final_round.warped[i], templ.data, mask);
  summary["final_similarity"] = fits;
  summary["seconds"] = since(start);
  write_json_file((fs::path(s.out) / "summary.json").string(), summary);
  base::write_file_atomically((fs::path(s.out) / "index.html").string(), qc::render_template_report(summary));
  return summary;
}

}  // namespace autoreg::pipeline
