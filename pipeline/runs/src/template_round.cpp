#include "template_round.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "autoreg/base/stopwatch.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/mapped.h"
#include "autoreg/pair/output_files.h"

namespace autoreg::pipeline::detail {

io::Volume read_normalised(const std::string& image, const PairOptions& o) {
  io::Volume v = io::read_volume(image);
  PairResult::Intensity how;
  v.data = normalise_intensities(v.data, at::Tensor(), o, {0.5, 99.5}, &how);
  if (!(v.data.max().item<double>() > 0)) {
    throw io::IoError(image + ": no contrast to register (its intensities between the 0.5th and 99.5th "
                      "percentiles are one value)");
  }
  return v;
}

std::vector<Subject> read_subjects(const TemplateSettings& s, const PairOptions& o) {
  const auto rows = io::read_csv(s.images, {"image", "labels"}, {"image"}, "image list");
  if (rows.size() < 2) {
    throw io::IoError(s.images + ": a template needs at least two subjects, the list has " + std::to_string(rows.size()));
  }
  std::vector<Subject> out;
  std::set<std::string> taken;
  for (const auto& row : rows) {
    Subject subject;
    subject.image = io::path_beside(s.images, row.fields[0]);
    subject.labels = io::path_beside(s.images, row.fields[1]);
    if (subject.image.empty()) throw io::IoError(s.images + ":" + std::to_string(row.line) + ": a row without an image");
    const std::string stem = file_stem(subject.image);
    subject.name = stem;
    for (int n = 2; taken.count(subject.name); ++n) subject.name = stem + "_" + std::to_string(n);
    taken.insert(subject.name);
    subject.volume = read_normalised(subject.image, o);
    out.push_back(std::move(subject));
  }
  return out;
}

void Ranks::stop_if_failed(const std::exception_ptr& failure) const {
  if (!collective) {
    if (failure) std::rethrow_exception(failure);
    return;
  }
  if (collective->any(failure != nullptr)) {
    if (failure) std::rethrow_exception(failure);
    throw PeerFailed();
  }
}

void Ranks::each_mine(size_t n, const std::function<void(size_t)>& work) const {
  std::exception_ptr failure;
  for (size_t i = 0; i < n && !failure; ++i) {
    if (!mine(i)) continue;
    try {
      work(i);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  stop_if_failed(failure);
}

void Ranks::from_owner(size_t i, std::vector<at::Tensor>& tensors) const {
  if (!collective) return;
  if (!mine(i)) {
    for (at::Tensor& t : tensors) t.fill_(-0.0);
  }
  collective->sum(tensors);
}

void Ranks::from_lead(std::vector<at::Tensor>& tensors) const {
  if (collective) collective->broadcast(tensors);
}

namespace {

// Subject i registered to the template: its result and warped image (float32, as every
// rank shares them).
void register_one(const io::Volume& templ, const Subject& subject, const PairOptions& o, const at::Tensor& foreground,
                  double inside, PairResult& result, at::Tensor& warped) {
  result = register_pair({templ.data.clone(), templ.geometry}, subject.volume, o);
  c10::AutoGradMode no_grad(false);
  result.affine = result.affine.to(at::kDouble);
  warped = io::sample_mapped(subject.volume, templ.geometry, at::Tensor(), result.displacement).to(at::kFloat);
  // How much of the template's foreground the subject covers after registration.
  const io::Volume ones{at::ones_like(subject.volume.data), subject.volume.geometry};
  const at::Tensor covered = io::sample_mapped(ones, templ.geometry, at::Tensor(), result.displacement) > 0.5;
  const double fraction = (covered & foreground).sum().item<double>() / inside;
  if (fraction < 0.5) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.0f %%", 100 * fraction);
    throw io::IoError(subject.image + ": after registration it covers only " + pct +
                      " of the template's foreground; check that it shows the same anatomy and field of view");
  }
}

}  // namespace

Round register_all(const io::Volume& templ, const std::vector<Subject>& subjects, PairOptions o, bool inverse,
                   const std::string& stage, const TemplateSettings& s, const Ranks& ranks) {
  o.inverse = inverse;
  const size_t n = subjects.size();
  Round round;
  round.results.resize(n);
  round.warped.resize(n);
  const at::Tensor foreground = templ.data > 0.1;
  const double inside = std::max<double>(1, foreground.sum().item<double>());
  ranks.each_mine(n, [&](size_t i) {
    const auto start = std::chrono::steady_clock::now();
    register_one(templ, subjects[i], o, foreground, inside, round.results[i], round.warped[i]);
    if (s.log) {
      char line[512];
      std::snprintf(line, sizeof line, "template: %s, subject %zu/%zu (%s) %.1f s", stage.c_str(), i + 1, n,
                    subjects[i].name.c_str(), base::seconds_since(start));
      s.log(line);
    }
  });
  if (ranks.world == 1) return round;
  // Every subject's warped image, field and affine to every rank, one subject at a time
  // (a few volumes' worth of buffers, not the cohort's).
  const int64_t d = templ.data.size(2), h = templ.data.size(3), w = templ.data.size(4);
  c10::AutoGradMode no_grad(false);
  for (size_t i = 0; i < n; ++i) {
    PairResult& r = round.results[i];
    if (!ranks.mine(i)) {
      round.warped[i] = at::empty({1, 1, d, h, w}, at::kFloat);
      r.displacement = at::empty({1, 3, d, h, w}, at::kFloat);
      r.affine = at::empty({4, 4}, at::kDouble);
    }
    std::vector<at::Tensor> shared{round.warped[i], r.displacement, r.affine};
    ranks.from_owner(i, shared);
    round.warped[i] = shared[0];
    r.displacement = shared[1];
    r.affine = shared[2];
  }
  return round;
}

at::Tensor average(const std::vector<at::Tensor>& warped, Averaging how) {
  const at::Tensor stack = at::cat(warped, 0);
  if (how == Averaging::Median) return std::get<0>(stack.median(0, /*keepdim=*/true));
  const at::Tensor mean = stack.mean(0, /*keepdim=*/true);
  if (how == Averaging::Mean) return mean;
  // sharpened: an unsharp mask, the mean plus half its difference from its 3³ box average
  const at::Tensor blurred = at::avg_pool3d(mean, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, false);
  return (mean + 0.5 * (mean - blurred)).clamp(0, 1);
}

double correlation(const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask) {
  const at::Tensor x = a.masked_select(mask).to(at::kDouble), y = b.masked_select(mask).to(at::kDouble);
  const at::Tensor dx = x - x.mean(), dy = y - y.mean();
  const double den = std::sqrt((dx * dx).sum().item<double>() * (dy * dy).sum().item<double>());
  return den > 0 ? (dx * dy).sum().item<double>() / den : 0.0;
}

}  // namespace autoreg::pipeline::detail
