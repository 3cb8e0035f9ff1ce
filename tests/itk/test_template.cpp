// autoreg template through the library (pipeline/template_job.h), on subjects made by
// known smooth deformations of one phantom: the template takes the phantom's shape (the
// unbiased average: the final deformations' mean near zero), sharper than the plain
// mean; a run interrupted after an iteration and resumed ends as an uninterrupted run,
// bit for bit; an old checkpoint is not resumed from by mistake; subjects of one file
// name get distinct outputs; bad input is refused with the file's name.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autoreg/base/errors.h"
#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "autoreg/ops.h"
#include "autoreg/runs/template_job.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kSize = 32;

// An ellipsoid with two inner structures, 1×1×32³.
at::Tensor phantom() {
  const at::Tensor r = at::arange(kSize, at::kFloat) - (kSize - 1) / 2.0;
  const auto axes = at::meshgrid({r, r, r}, "ij");
  const auto inside = [&](double cd, double ch, double cw, double rd, double rh, double rw) {
    const at::Tensor q = ((axes[0] - cd) / rd).pow(2) + ((axes[1] - ch) / rh).pow(2) + ((axes[2] - cw) / rw).pow(2);
    return at::sigmoid(12.0 * (1.0 - q));
  };
  return (60 * inside(0, 0, 0, 12, 10, 13) + 40 * inside(-4, 2, -4, 4, 3, 4) - 30 * inside(4, -2, 5, 3, 4, 3))
      .view({1, 1, kSize, kSize, kSize});
}

// A smooth displacement (voxels): sign · amplitude · a low-frequency pattern, different per `kind`.
at::Tensor deformation(int kind, double sign) {
  const at::Tensor x = at::arange(kSize, at::kFloat) * (M_PI / (kSize - 1));
  const auto axes = at::meshgrid({x, x, x}, "ij");
  const at::Tensor a = at::sin(axes[0 + kind % 3]) * at::sin(axes[(1 + kind) % 3]);
  const at::Tensor b = at::cos(axes[(2 + kind) % 3]) * at::sin(axes[0]);
  return sign * 3.0 * at::stack({a, b, a * b}, 0).unsqueeze(0);
}

struct Cohort {
  std::string csv;
  at::Tensor phantom;  // normalised as the template is
  std::vector<std::string> images;
};

Cohort make_cohort(const fs::path& dir) {
  fs::create_directories(dir);
  io::Geometry g;
  g.size = {kSize, kSize, kSize};
  g.spacing = {1.5, 1.5, 1.5};
  const at::Tensor p = phantom();
  Cohort c{(dir / "subjects.csv").string(), io::normalize_intensity(p, 0.5, 99.5), {}};
  std::ofstream csv(c.csv);
  csv << "image\n";
  int n = 0;
  for (int kind = 0; kind < 2; ++kind) {
    for (double sign : {1.0, -1.0}) {
      const std::string name = "subject" + std::to_string(++n) + ".nii.gz";
      io::write_volume((dir / name).string(), {ops::warp(p, deformation(kind, sign), ops::Interpolation::Linear,
                                                          ops::Padding::Border), g});
      c.images.push_back((dir / name).string());
      csv << name << "\n";
    }
  }
  return c;
}

pipeline::TemplateSettings settings(const Cohort& c, const fs::path& out) {
  pipeline::TemplateSettings s;
  s.images = c.csv;
  s.out = out.string();
  s.iterations = 3;
  s.initial = pipeline::parse_initial("first");
  s.step = 0.5;
  s.registration.affine = false;
  s.registration.iterations = {60, 40};
  return s;
}

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("autoreg_template_" + name + "_" + std::to_string(::getpid()));
}

double mse(const at::Tensor& a, const at::Tensor& b) { return (a - b).pow(2).mean().item<double>(); }

double gradient_energy(const at::Tensor& v) {
  const at::Tensor t = v[0][0];
  return (t.diff(1, 0).pow(2).mean() + t.diff(1, 1).pow(2).mean() + t.diff(1, 2).pow(2).mean()).item<double>();
}

TEST(Template, TakesThePhantomsShapeSharperThanThePlainMean) {
  at::set_num_threads(2);
  const fs::path dir = scratch("shape");
  const Cohort c = make_cohort(dir / "in");
  const auto summary = pipeline::build_template(settings(c, dir / "out"));
  const at::Tensor templ = io::read_volume((dir / "out" / "template.nii.gz").string()).data;
  const at::Tensor first = io::normalize_intensity(io::read_volume(c.images[0]).data, 0.5, 99.5);
  std::vector<at::Tensor> subjects;
  for (const auto& image : c.images) subjects.push_back(io::normalize_intensity(io::read_volume(image).data, 0.5, 99.5));
  const at::Tensor plain_mean = at::cat(subjects, 0).mean(0, true);
  // The phantom's shape: far closer to it than the first subject (where it started).
  EXPECT_LT(mse(templ, c.phantom), 0.35 * mse(first, c.phantom));
  // Sharper than the plain mean of the subjects.
  // Measured: MSE 0.0018 against the first subject's 0.017 and the plain mean's 0.0035;
  // gradient energy 0.0076 against the plain mean's 0.0050 (the phantom's 0.0084).
  EXPECT_LT(mse(templ, c.phantom), 0.7 * mse(plain_mean, c.phantom));
  EXPECT_GT(gradient_energy(templ), 1.2 * gradient_energy(plain_mean));
  // Unbiased: the final deformations' mean is small beside the deformations themselves.
  at::Tensor sum, magnitude = at::zeros({});
  for (size_t i = 0; i < c.images.size(); ++i) {
    const at::Tensor d = io::read_displacement_field((dir / "out" / ("subject" + std::to_string(i + 1) + "_field.nii.gz")).string());
    sum = sum.defined() ? sum + d : d.clone();
    magnitude = magnitude + d.pow(2).sum(1).sqrt().mean();
  }
  const double mean_of_fields = (sum / 4.0).pow(2).sum(1).sqrt().mean().item<double>();
  EXPECT_LT(mean_of_fields, 0.3 * magnitude.item<double>() / 4.0);
  // Outputs and their record.
  for (const char* f : {"subject1_inverse.nii.gz", "subject4_warped.nii.gz", "index.html", "summary.json",
                        "template.log.jsonl", "iterations/template_3.png"}) {
    EXPECT_TRUE(fs::exists(dir / "out" / f)) << f;
  }
  EXPECT_EQ(summary["iterations"].size(), 3u);
  EXPECT_LT(summary["iterations"][2]["update_mm"].get<double>(), summary["iterations"][0]["update_mm"].get<double>());
  fs::remove_all(dir);
}

TEST(Template, ResumedAfterAnInterruptedIterationEndsAsAnUninterruptedRun) {
  at::set_num_threads(2);
  const fs::path dir = scratch("resume");
  const Cohort c = make_cohort(dir / "in");
  pipeline::build_template(settings(c, dir / "whole"));
  pipeline::TemplateSettings s = settings(c, dir / "parts");
  s.after_checkpoint = [](int t) {
    if (t == 2) throw base::Interrupted("stopped after iteration 2");
  };
  EXPECT_THROW(pipeline::build_template(s), base::Interrupted);
  EXPECT_FALSE(fs::exists(dir / "parts" / "template.nii.gz"));
  s.after_checkpoint = nullptr;
  s.resume = true;
  const auto summary = pipeline::build_template(s);
  EXPECT_EQ(summary["iterations"].size(), 3u);
  EXPECT_TRUE(at::equal(io::read_volume((dir / "whole" / "template.nii.gz").string()).data,
                        io::read_volume((dir / "parts" / "template.nii.gz").string()).data));
  for (const char* f : {"subject2_field.nii.gz", "subject3_inverse.nii.gz"}) {
    EXPECT_TRUE(at::equal(io::read_displacement_field((dir / "whole" / f).string()),
                          io::read_displacement_field((dir / "parts" / f).string())))
        << f;
  }
  fs::remove_all(dir);
}

// --converged-mm: the shape updates stop once an iteration moved the template by less
// than the threshold, also when that iteration was the last one before an interruption
// (the resumed ranks learn the last update from the checkpoint's log).
TEST(Template, StopsOnceTheShapeUpdatesConvergeAlsoWhenResumed) {
  at::set_num_threads(2);
  const fs::path dir = scratch("converged");
  const Cohort c = make_cohort(dir / "in");
  const auto whole = pipeline::build_template(settings(c, dir / "whole"));  // 3 iterations
  const double u1 = whole["iterations"][0]["update_mm"].get<double>(), u2 = whole["iterations"][1]["update_mm"].get<double>();
  ASSERT_LT(u2, u1);
  pipeline::TemplateSettings s = settings(c, dir / "parts");
  s.converged_mm = (u1 + u2) / 2;  // iteration 2 is under it, iteration 1 is not
  s.after_checkpoint = [](int t) {
    if (t == 2) throw base::Interrupted("stopped after iteration 2");
  };
  EXPECT_THROW(pipeline::build_template(s), base::Interrupted);
  s.after_checkpoint = [](int t) { ADD_FAILURE() << "iteration " << t << " after the updates converged"; };
  s.resume = true;
  std::vector<std::string> lines;
  s.log = [&lines](const std::string& line) { lines.push_back(line); };
  const auto summary = pipeline::build_template(s);
  EXPECT_EQ(summary["iterations"].size(), 2u);
  EXPECT_EQ(summary["settings"]["converged_mm"].get<double>(), s.converged_mm);
  EXPECT_TRUE(at::equal(io::read_volume((dir / "whole" / "iterations" / "template_2.nii.gz").string()).data,
                        io::read_volume((dir / "parts" / "template.nii.gz").string()).data));
  bool said = false;
  for (const auto& line : lines) said = said || line.find("converged after iteration 2") != std::string::npos;
  EXPECT_TRUE(said);
  fs::remove_all(dir);
}

TEST(Template, BadInputIsRefusedNamingTheFile) {
  const fs::path dir = scratch("bad");
  const Cohort c = make_cohort(dir / "in");
  {
    std::ofstream one(dir / "one.csv");
    one << "image\nin/subject1.nii.gz\n";
  }
  pipeline::TemplateSettings s = settings(c, dir / "out");
  s.images = (dir / "one.csv").string();
  try {
    pipeline::build_template(s);
    ADD_FAILURE() << "one subject was accepted";
  } catch (const io::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("one.csv: a template needs at least two subjects"), std::string::npos) << e.what();
  }
  s = settings(c, dir / "out");
  s.step = 0;
  EXPECT_THROW(pipeline::build_template(s), base::UsageError);
  s = settings(c, dir / "out");
  s.initial = pipeline::parse_initial((dir / "missing.nii.gz").string());
  EXPECT_THROW(pipeline::build_template(s), io::IoError);
  fs::remove_all(dir);
}

// A fresh run forgets an earlier run's checkpoint (so a launcher's restart of it cannot
// continue from that one); a resume whose checkpoint is on another grid is refused
// naming the file.
TEST(Template, AFreshRunForgetsAnOldCheckpointAndResumeRefusesAForeignOne) {
  at::set_num_threads(2);
  const fs::path dir = scratch("checkpoints");
  const Cohort c = make_cohort(dir / "in");
  pipeline::TemplateSettings s = settings(c, dir / "out");
  s.iterations = 1;
  s.after_checkpoint = [](int) { throw base::Interrupted("stopped after iteration 1"); };
  EXPECT_THROW(pipeline::build_template(s), base::Interrupted);
  ASSERT_TRUE(fs::exists(dir / "out" / "state.json"));
  io::Geometry other;
  other.size = {16, 16, 16};
  io::write_volume((dir / "out" / "iterations" / "template_1.nii.gz").string(), {at::rand({1, 1, 16, 16, 16}), other});
  s.after_checkpoint = nullptr;
  s.resume = true;
  try {
    pipeline::build_template(s);
    ADD_FAILURE() << "a checkpoint on another grid was resumed from";
  } catch (const io::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("template_1.nii.gz: not on the template's grid"), std::string::npos) << e.what();
  }
  s.resume = false;
  s.iterations = 0;
  pipeline::build_template(s);
  EXPECT_FALSE(fs::exists(dir / "out" / "state.json"));
  fs::remove_all(dir);
}

// Subjects whose image files share a name get distinct output names, also when a later
// file is named like an earlier one's suffixed name (a, x/a, a_2: a, a_2, a_2_2).
TEST(Template, SubjectsOfTheSameFileNameGetDistinctOutputs) {
  at::set_num_threads(2);
  const fs::path dir = scratch("names");
  const Cohort c = make_cohort(dir / "in");
  fs::create_directories(dir / "in" / "x");
  fs::copy_file(c.images[1], dir / "in" / "x" / "subject1.nii.gz");
  fs::copy_file(c.images[2], dir / "in" / "subject1_2.nii.gz");
  {
    std::ofstream csv(dir / "in" / "same.csv");
    csv << "image\nsubject1.nii.gz\nx/subject1.nii.gz\nsubject1_2.nii.gz\n";
  }
  pipeline::TemplateSettings s = settings(c, dir / "out");
  s.images = (dir / "in" / "same.csv").string();
  s.iterations = 0;
  const auto summary = pipeline::build_template(s);
  for (const char* name : {"subject1", "subject1_2", "subject1_2_2"}) {
    EXPECT_TRUE(fs::exists(dir / "out" / (std::string(name) + "_field.nii.gz"))) << name;
    EXPECT_TRUE(summary["final_similarity"].contains(name)) << name;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace autoreg::test
