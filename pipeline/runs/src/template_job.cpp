#include "autoreg/runs/template_job.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "autoreg/base/atomic_file.h"
#include "autoreg/base/number_text.h"
#include "autoreg/base/stopwatch.h"
#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/ops.h"
#include "autoreg/runs/exit_codes.h"
#include "autoreg/runs/run_settings.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/pair/qc_picture.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/qc/template_report.h"
#include "autoreg/segmentation/fusion.h"
#include "long_run.h"
#include "template_round.h"

namespace autoreg::pipeline {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using detail::Ranks;
using detail::Round;
using detail::Subject;

std::string iteration_file(const TemplateSettings& s, int t, const char* ext) {
  return (fs::path(s.out) / "iterations" / ("template_" + std::to_string(t) + ext)).string();
}

// The image the template starts from and whose grid it keeps: the first subject, or
// the given --initial image (normalised as the subjects are).
io::Volume starting_image(const TemplateSettings& s, const std::vector<Subject>& subjects, const PairOptions& o) {
  if (s.initial.rule != InitialTemplate::Rule::Image) return subjects[0].volume;
  return detail::read_normalised(s.initial.image, o);
}

// The template before the first update.
io::Volume initial_template(const TemplateSettings& s, const std::vector<Subject>& subjects, const PairOptions& o,
                            const Ranks& ranks) {
  if (s.initial.rule != InitialTemplate::Rule::AffineMean) return starting_image(s, subjects, o);
  PairOptions affine = o;
  affine.stages = Stages::AffineOnly;
  affine.model.reset();
  affine.refine = 0;
  const Round round = detail::register_all(subjects[0].volume, subjects, affine, false, "affine mean", s, ranks);
  return {detail::average(round.warped, Averaging::Mean), subjects[0].volume.geometry};
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
    const double c = detail::correlation(round.warped[i], old_t.data, mask);
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

// `work` on rank 0 alone (reading the checkpoint, writing the shared files), its failure
// stopping every rank rather than leaving the others in their next collective until it
// times out: the one "subject" 0 is rank 0's.
void on_lead(const Ranks& ranks, const std::function<void()>& work) {
  ranks.each_mine(1, [&](size_t) { work(); });
}

struct Start {
  std::vector<nlohmann::json> iterations;  // done already (on ranks other than 0, their numbers alone)
  io::Volume templ;                        // the last one's template; empty when none is done
  double last_update_mm = std::numeric_limits<double>::infinity();  // the last one's mean update
};

// Where the run starts. Rank 0 alone reads the checkpoint (a failure there stops every
// rank) and gives every rank the number of iterations done and the template's voxels, so
// the ranks cannot start from different iterations (a file one node's cache still hides);
// the grid is the starting image's, in double precision, as in an uninterrupted run.
Start resume_point(const TemplateSettings& s, const std::vector<Subject>& subjects, const PairOptions& o,
                   const Ranks& ranks) {
  Start start;
  if (!s.resume) return start;
  at::Tensor count = at::zeros({2}, at::kDouble);  // iterations done, the last one's mean update
  on_lead(ranks, [&] {
    start.iterations = done_iterations(s);
    count[0] = double(start.iterations.size());
    if (!start.iterations.empty()) count[1] = start.iterations.back().value("update_mm", start.last_update_mm);
  });
  std::vector<at::Tensor> shared{count};
  ranks.from_lead(shared);
  const int done = int(shared[0][0].item<double>());
  start.last_update_mm = shared[0][1].item<double>();
  if (done == 0) return start;
  const io::Volume first = starting_image(s, subjects, o);
  start.templ = {at::zeros_like(first.data), first.geometry};
  on_lead(ranks, [&] {
    const std::string file = iteration_file(s, done, ".nii.gz");
    const io::Volume checkpoint = io::read_volume(file);
    if (!io::same_grid(checkpoint.geometry, first.geometry) || !checkpoint.data.sizes().equals(first.data.sizes())) {
      throw io::IoError(file + ": not on the template's grid (a checkpoint of another run in --out?)");
    }
    start.templ.data = checkpoint.data;
  });
  std::vector<at::Tensor> voxels{start.templ.data};
  ranks.from_lead(voxels);
  start.templ.data = voxels[0];
  for (int t = int(start.iterations.size()) + 1; t <= done; ++t) start.iterations.push_back({{"iteration", t}});
  return start;
}

// Each rank writes its own subjects' outputs (fields, warped image and labels); rank 0
// the template and the label map fused from every subject's warped labels.
void write_outputs(const TemplateSettings& s, const io::Volume& templ, const std::vector<Subject>& subjects,
                   const Round& final_round, nlohmann::json& summary, const Ranks& ranks) {
  const fs::path out(s.out);
  on_lead(ranks, [&] { io::write_volume((out / "template.nii.gz").string(), templ); });
  const bool all_labels =
      std::all_of(subjects.begin(), subjects.end(), [](const Subject& subject) { return !subject.labels.empty(); });
  std::vector<at::Tensor> warped_labels(subjects.size());
  ranks.each_mine(subjects.size(), [&](size_t i) {
    const Subject& subject = subjects[i];
    const PairResult& r = final_round.results[i];
    io::write_displacement_field((out / (subject.name + "_field.nii.gz")).string(), r.displacement, templ.geometry);
    io::write_displacement_field((out / (subject.name + "_inverse.nii.gz")).string(), r.inverse, subject.volume.geometry);
    io::write_volume((out / (subject.name + "_warped.nii.gz")).string(), {final_round.warped[i], templ.geometry});
    if (subject.labels.empty()) return;
    io::Volume labels = io::read_volume(subject.labels, io::PixelKind::Labels);
    if (!io::same_grid(labels.geometry, subject.volume.geometry)) {
      throw io::IoError(subject.labels + ": not on the grid of its image " + subject.image);
    }
    c10::AutoGradMode no_grad(false);
    warped_labels[i] = io::sample_mapped(labels, templ.geometry, at::Tensor(), r.displacement).to(at::kInt);
    io::write_volume((out / (subject.name + "_warped_labels.nii.gz")).string(), {warped_labels[i], templ.geometry});
  });
  if (!all_labels) return;
  segmentation::Atlases atlases;
  for (size_t i = 0; i < subjects.size(); ++i) {
    if (!ranks.mine(i)) warped_labels[i] = at::empty_like(templ.data, at::kInt);
    std::vector<at::Tensor> shared{warped_labels[i]};
    ranks.from_owner(i, shared);
    atlases.images.push_back(final_round.warped[i][0][0]);
    atlases.labels.push_back(shared[0][0][0]);
  }
  summary["template_labels"] = "template_labels.nii.gz";
  if (!ranks.lead()) return;
  const auto fused = segmentation::fuse(templ.data[0][0], atlases);
  io::write_volume((out / "template_labels.nii.gz").string(), {fused.labels.unsqueeze(0).unsqueeze(0), templ.geometry});
}

// Rank 0's checkpoint of iteration t: the template, its picture, state.json and the log.
void write_checkpoint(const TemplateSettings& s, int t, const io::Volume& next, const io::Volume& templ, const Update& u,
                      const std::vector<nlohmann::json>& iterations) {
  io::write_volume(iteration_file(s, t, ".nii.gz"), next);
  write_qc_picture(iteration_file(s, t, ".png"),
                   {next.data, templ.data, at::Tensor(), u.update, templ.geometry,
                    "autoreg template: iteration " + std::to_string(t) + " (fixed: the new template; warped: the one before)",
                    "shape update: the mean affine inverted, and the mean deformation x " + std::to_string(s.step).substr(0, 4) + " backwards"});
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
}

// The next template from the current one (one iteration), its checkpoint written by
// rank 0; the iteration's log line appended to `iterations`.
io::Volume iterate(const TemplateSettings& s, int t, const io::Volume& templ, const std::vector<Subject>& subjects,
                   const PairOptions& o, const Ranks& ranks, std::vector<nlohmann::json>& iterations) {
  const auto begun = Clock::now();
  const Round round = detail::register_all(
      templ, subjects, o, false, "iteration " + std::to_string(t) + "/" + std::to_string(s.iterations), s, ranks);
  c10::AutoGradMode no_grad(false);
  const Update u = shape_update(round, templ.geometry, s.step);
  const io::Volume next{
      ops::warp(detail::average(round.warped, s.averaging), u.update, ops::Interpolation::Linear, ops::Padding::Border),
      templ.geometry};
  iterations.push_back(iteration_record(t, templ, u, round, subjects, base::seconds_since(begun)));
  on_lead(ranks, [&] { write_checkpoint(s, t, next, templ, u, iterations); });
  return next;
}

// The template built by this process, alone or as one of the ranks.
nlohmann::json build_on(const TemplateSettings& s, const Ranks& ranks) {
  const auto start = Clock::now();
  const PairOptions o = pair_options(s.registration);
  const std::vector<Subject> subjects = detail::read_subjects(s, o);
  Start resumed = resume_point(s, subjects, o, ranks);
  std::vector<nlohmann::json> iterations = std::move(resumed.iterations);
  io::Volume templ = std::move(resumed.templ);
  if (iterations.empty()) {
    templ = initial_template(s, subjects, o, ranks);
    on_lead(ranks, [&] { io::write_volume(iteration_file(s, 0, ".nii.gz"), templ); });
  } else if (s.log && ranks.lead()) {
    s.log("template: resuming after iteration " + std::to_string(iterations.size()));
  }
  double last_update_mm = resumed.last_update_mm;  // the same on every rank: they stop together
  for (int t = int(iterations.size()) + 1; t <= s.iterations; ++t) {
    if (last_update_mm < s.converged_mm) {
      if (s.log && ranks.lead()) {
        s.log("template: converged after iteration " + std::to_string(t - 1) + " (mean update " +
              base::exact_text(std::round(last_update_mm * 1000) / 1000) + " mm < --converged-mm)");
      }
      break;
    }
    templ = iterate(s, t, templ, subjects, o, ranks, iterations);
    last_update_mm = iterations.back()["update_mm"].get<double>();
    if (s.converged_mm > 0) {  // rank 0's, so that ranks whose arithmetic differs in the last bits stop together
      std::vector<at::Tensor> shared{at::full({1}, last_update_mm, at::kDouble)};
      ranks.from_lead(shared);
      last_update_mm = shared[0].item<double>();
    }
    if (s.after_checkpoint) s.after_checkpoint(t);
  }
  const Round final_round = detail::register_all(templ, subjects, o, true, "final registrations", s, ranks);
  nlohmann::json summary = {{"subjects", subjects.size()}, {"iterations", iterations}, {"template", "template.nii.gz"},
                            {"ranks", ranks.world},
                            {"settings", {{"initial", initial_text(s.initial)}, {"step", s.step}, {"averaging", averaging_name(s.averaging)},
                                          {"converged_mm", s.converged_mm},
                                          {"preset", s.registration.preset}, {"model", s.registration.model},
                                          {"similarity", s.registration.similarity}}}};
  write_outputs(s, templ, subjects, final_round, summary, ranks);
  const at::Tensor mask = templ.data > 0.1;
  nlohmann::json fits = nlohmann::json::object();
  for (size_t i = 0; i < subjects.size(); ++i) {
    fits[subjects[i].name] = detail::correlation(final_round.warped[i], templ.data, mask);
  }
  summary["final_similarity"] = fits;
  summary["seconds"] = base::seconds_since(start);
  if (!ranks.lead()) {
    summary["rank"] = ranks.rank;
    return summary;
  }
  write_json_file((fs::path(s.out) / "summary.json").string(), summary);
  base::write_file_atomically((fs::path(s.out) / "index.html").string(), qc::render_template_report(summary));
  summary["rank"] = ranks.rank;
  return summary;
}

std::string failures_file(const TemplateSettings& s) { return (fs::path(s.out) / "failures.jsonl").string(); }

// Under --nproc: the ranks are `autoreg template` processes of these settings; the
// summary is the one rank 0 wrote.
nlohmann::json build_supervised(const TemplateSettings& s) {
  detail::supervise_job(to_arguments(s), s.executable, s.scale, s.threads, failures_file(s));
  const fs::path summary = fs::path(s.out) / "summary.json";
  std::ifstream in(summary);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw io::IoError(summary.string() + ": the ranks ended without writing it");
  return j;
}

}  // namespace

nlohmann::json build_template(const TemplateSettings& settings) {
  validate(settings);
  make_output_folder("--out", settings.out);
  make_output_folder("--out", (fs::path(settings.out) / "iterations").string());
  if (settings.scale.nproc > 0) return build_supervised(settings);
  parallel::Distributed dist = parallel::join_if_distributed(settings.scale, settings.registration.device);
  TemplateSettings s = settings;
  s.resume = s.resume || dist.restarted();  // a launcher's restart continues from the checkpoint
  const Ranks ranks{dist.collective.get(), dist.rank(), dist.world()};
  // A fresh run forgets an earlier run's checkpoint in --out, so that a restart of this
  // one cannot continue from it.
  if (!s.resume && ranks.lead()) fs::remove(fs::path(s.out) / "state.json");
  if (s.log && ranks.world > 1 && ranks.lead()) {
    s.log("template: " + std::to_string(ranks.world) + " ranks, each registering its share of the subjects");
  }
  try {
    return build_on(s, ranks);
  } catch (const base::Interrupted&) {
    throw;
  } catch (const detail::PeerFailed&) {
    throw;  // the rank that failed diagnoses itself
  } catch (const std::exception& e) {
    parallel::diagnose_own_failure(dist, e, exit_code(e), failures_file(s));
    throw;
  }
}

}  // namespace autoreg::pipeline
