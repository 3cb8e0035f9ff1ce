// The long-run jobs as a program of one's own calls them (pipeline/train_job.h,
// search_job.h, adapt_job.h, template_job.h): settings written back as the command line that parses into
// them (what the --nproc supervisor's ranks and the search's evaluation watcher run),
// their validation, and a training run through the library alone.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autoreg/base/errors.h"
#include "autoreg/io/volume.h"
#include "autoreg/pair/register_job.h"
#include "autoreg/runs/adapt_job.h"
#include "autoreg/runs/pack_job.h"
#include "autoreg/runs/register_pairs.h"
#include "autoreg/runs/search_job.h"
#include "autoreg/runs/segment_job.h"
#include "autoreg/runs/template_job.h"
#include "autoreg/runs/train_job.h"
#include "autoreg/registration/model_file.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;
using Words = std::vector<std::string>;

// The value after `option`; "" when absent, "<flag>" when it is the last word or
// followed by another option.
std::string value_of(const Words& w, const std::string& option) {
  const auto it = std::find(w.begin(), w.end(), option);
  if (it == w.end()) return "";
  if (it + 1 == w.end() || (it + 1)->rfind("--", 0) == 0) return "<flag>";
  return *(it + 1);
}

bool has(const Words& w, const std::string& option) { return std::find(w.begin(), w.end(), option) != w.end(); }

double read_back(const std::string& text) {
  std::istringstream in(text);
  double v = 0;
  in >> v;
  return v;
}

TEST(TrainSettings, TheCommandLineCarriesEverySettingAndReadsBackExactly) {
  pipeline::TrainSettings s;
  s.manifest = "data.csv";
  s.out = "m.autoreg";
  s.genotype = "g.txt";
  s.grid = {96, 112, 80};
  s.spacing = 1.7;
  s.epochs = 3;
  s.learning_rate = 1.0 / 3.0;
  s.objective = "ncc9=1,smoothness=0.8";
  s.augment = false;
  s.batch = 4;
  s.run.seed = 12345678901234ull;
  s.run.threads = 3;
  s.run.resume = true;
  s.validation = pipeline::Validation::Inline;
  s.scale.nproc = 2;
  s.scale.max_restarts = 1;
  const Words w = pipeline::to_arguments(s);
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w[0], "train");
  EXPECT_EQ(value_of(w, "--manifest"), "data.csv");
  EXPECT_EQ(value_of(w, "--genotype"), "g.txt");
  EXPECT_EQ(value_of(w, "--grid"), "96x112x80");
  EXPECT_EQ(read_back(value_of(w, "--learning-rate")), 1.0 / 3.0) << "numbers must read back to the same double";
  EXPECT_EQ(read_back(value_of(w, "--spacing")), 1.7);
  EXPECT_EQ(value_of(w, "--epochs"), "3");
  EXPECT_FALSE(has(w, "--steps")) << "--steps and --epochs exclude each other";
  EXPECT_EQ(value_of(w, "--objective"), "ncc9=1,smoothness=0.8");
  EXPECT_FALSE(has(w, "--similarity") || has(w, "--lambda")) << "--objective replaces them";
  EXPECT_EQ(value_of(w, "--no-augment"), "<flag>");
  EXPECT_FALSE(has(w, "--no-diffeomorphic"));
  EXPECT_EQ(value_of(w, "--batch"), "4");
  EXPECT_EQ(value_of(w, "--seed"), "12345678901234");
  EXPECT_EQ(value_of(w, "--threads"), "3");
  EXPECT_EQ(value_of(w, "--resume"), "<flag>");
  EXPECT_EQ(value_of(w, "--validation"), "inline");
  EXPECT_FALSE(has(w, "--nproc") || has(w, "--max-restarts")) << "the ranks are not supervisors";
  EXPECT_FALSE(has(w, "--cache") || has(w, "--log")) << "left at their defaults: not written";

  // Defaults: steps, similarity and lambda instead; no batch, no threads.
  pipeline::TrainSettings d;
  d.manifest = "a.csv";
  d.out = "b.autoreg";
  const Words dw = pipeline::to_arguments(d);
  EXPECT_EQ(value_of(dw, "--steps"), "1000");
  EXPECT_EQ(value_of(dw, "--similarity"), "ncc");
  EXPECT_FALSE(has(dw, "--batch") || has(dw, "--threads") || has(dw, "--grid") || has(dw, "--genotype"));
}

// The template's ranks get its settings and each registration's, exactly; settings no
// option of `register` expresses are refused rather than changed.
TEST(TemplateSettings, TheCommandLineCarriesTheRegistrationSettings) {
  pipeline::TemplateSettings s;
  s.images = "subjects.csv";
  s.out = "t";
  s.iterations = 3;
  s.step = 0.2;
  s.averaging = pipeline::Averaging::Median;
  s.threads = 2;
  s.scale.nproc = 2;
  s.registration = pipeline::preset_settings("breathing");
  s.registration.rigid = true;
  s.registration.affine = true;
  s.registration.regularization = 1.0 / 3.0;
  s.registration.ncc_window_mm = 7.5;
  s.registration.seed = 99;
  s.registration.intensity_window = std::array<double, 2>{-1000, 400};
  s.registration.padding = pipeline::parse_padding("-3024");
  s.registration.discrete_mm = 12.5;
  Words w = pipeline::to_arguments(s);
  EXPECT_EQ(pipeline::parse_padding(value_of(w, "--padding")), s.registration.padding);
  EXPECT_EQ(read_back(value_of(w, "--discrete-mm")), 12.5);
  EXPECT_THROW(pipeline::parse_padding("-10OO"), base::UsageError);
  EXPECT_EQ(pipeline::padding_text(pipeline::Padding{}), "auto");
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w[0], "template");
  EXPECT_EQ(value_of(w, "--images"), "subjects.csv");
  EXPECT_EQ(value_of(w, "--template-iterations"), "3");
  EXPECT_EQ(read_back(value_of(w, "--step")), 0.2);
  EXPECT_EQ(value_of(w, "--averaging"), "median");
  EXPECT_EQ(value_of(w, "--threads"), "2");
  EXPECT_FALSE(has(w, "--nproc")) << "the ranks are not supervisors";
  EXPECT_EQ(value_of(w, "--preset"), "breathing");
  EXPECT_EQ(value_of(w, "--rigid"), "<flag>");
  EXPECT_FALSE(has(w, "--no-affine")) << "--rigid turns the preset's affine stage back on";
  EXPECT_EQ(value_of(w, "--full-resolution"), "<flag>");
  EXPECT_EQ(value_of(w, "--iterations"), "140,140,70,40");
  EXPECT_EQ(value_of(w, "--compare-finer"), "2");
  EXPECT_EQ(value_of(w, "--regularizer"), "tv");
  EXPECT_EQ(read_back(value_of(w, "--regularization")), 1.0 / 3.0);
  EXPECT_EQ(read_back(value_of(w, "--learning-rate")), 0.4);
  EXPECT_EQ(read_back(value_of(w, "--ncc-window-mm")), 7.5);
  EXPECT_EQ(value_of(w, "--seed"), "99");
  EXPECT_EQ(value_of(w, "--intensity-window"), "-1000,400");
  EXPECT_FALSE(has(w, "--model"));

  // With a model: --model and --refine, no --iterations (register refuses them together).
  s.registration = pipeline::RegistrationSettings();
  s.registration.model = "default";
  s.registration.refine = 5;
  w = pipeline::to_arguments(s);
  EXPECT_EQ(value_of(w, "--model"), "default");
  EXPECT_EQ(value_of(w, "--refine"), "5");
  EXPECT_FALSE(has(w, "--iterations") || has(w, "--rigid") || has(w, "--no-affine") || has(w, "--full-resolution"));

  // The affine stage on under breathing without --rigid, or full resolution off: no option says so.
  s.registration = pipeline::preset_settings("breathing");
  s.registration.affine = true;
  EXPECT_THROW(pipeline::to_arguments(s), base::UsageError);
  s.registration = pipeline::preset_settings("breathing");
  s.registration.full_resolution = false;
  EXPECT_THROW(pipeline::to_arguments(s), base::UsageError);
}

TEST(TrainSettings, ValidationNamesTheOption) {
  pipeline::TrainSettings s;
  s.manifest = "data.csv";
  s.out = "m.autoreg";
  EXPECT_NO_THROW(pipeline::validate(s));
  const auto message = [](pipeline::TrainSettings bad) {
    try {
      pipeline::validate(bad);
    } catch (const base::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  pipeline::TrainSettings bad = s;
  bad.spacing = 0;
  EXPECT_NE(message(bad).find("--spacing"), std::string::npos);
  bad = s;
  bad.grid = {16, 18, 16};
  EXPECT_NE(message(bad).find("multiples of 4"), std::string::npos);
  bad = s;
  bad.run.log = "m.autoreg";
  EXPECT_NE(message(bad).find("--log and --out"), std::string::npos);
  bad = s;
  bad.out = "data.csv";
  EXPECT_NE(message(bad).find("also an input"), std::string::npos);
  bad = s;
  bad.objective = "ncc9=x";
  EXPECT_NE(message(bad).find("--objective"), std::string::npos);
  bad = s;
  bad.scale.max_restarts = 2;
  EXPECT_NE(message(bad).find("--max-restarts needs --nproc"), std::string::npos);
}

TEST(SearchSettings, OnlyTheOptionsGivenAreWrittenAndTheWatcherIsTheSameSearch) {
  pipeline::SearchSettings s;
  s.manifest = "data.csv";
  s.out = "search-out";
  Words w = pipeline::to_arguments(s);
  EXPECT_EQ(w[0], "search");
  // Not given: the search decides (the default budget is the default network's time,
  // steps and retraining steps follow a budget).
  EXPECT_FALSE(has(w, "--steps") || has(w, "--retrain-steps") || has(w, "--budget-minutes") ||
               has(w, "--max-forward-ms") || has(w, "--evaluate") || has(w, "--batch"));
  s.budget_minutes = 7.5;
  s.retrain_steps = 0;
  s.max_forward_ms = 0;
  s.terms = "ncc9,mind";
  s.initial_objective = "ncc9=1,mind=0.1";
  s.evaluate = true;
  s.search.weight_crop = 0.1 + 0.2;
  w = pipeline::to_arguments(s);
  EXPECT_EQ(read_back(value_of(w, "--budget-minutes")), 7.5);
  EXPECT_EQ(value_of(w, "--retrain-steps"), "0");
  EXPECT_EQ(read_back(value_of(w, "--max-forward-ms")), 0.0);
  EXPECT_EQ(value_of(w, "--terms"), "ncc9,mind");
  EXPECT_EQ(value_of(w, "--evaluate"), "<flag>");
  EXPECT_EQ(read_back(value_of(w, "--weight-crop")), 0.1 + 0.2);
  EXPECT_FALSE(has(w, "--steps"));

  pipeline::SearchSettings bad = s;
  bad.steps = 10;  // with a budget
  EXPECT_THROW(pipeline::validate(bad), base::UsageError);
  bad = s;
  bad.evaluate = false;
  bad.terms = "none";
  bad.search.edges = search::EdgeSet::None;
  EXPECT_THROW(pipeline::validate(bad), base::UsageError);
  bad = s;
  bad.terms = "ncc9,nonsense";
  EXPECT_THROW(pipeline::validate(bad), base::UsageError);
  bad = s;
  bad.search.architecture_path = search::Path::Sampled;  // on a mixed path: nothing sampled to take α's gradient on
  EXPECT_THROW(pipeline::validate(bad), base::UsageError);
}

TEST(SearchSettings, EveryChoiceReadsBackFromItsName) {
  for (auto m : {search::Mode::Joint, search::Mode::Sequential}) EXPECT_EQ(search::parse_mode(search::to_string(m)), m);
  for (auto o : {search::Order::First, search::Order::Second}) EXPECT_EQ(search::parse_order(search::to_string(o)), o);
  for (auto e : {search::EdgeSet::All, search::EdgeSet::Deformation, search::EdgeSet::None}) {
    EXPECT_EQ(search::parse_edge_set(search::to_string(e)), e);
  }
  for (auto p : {search::Path::Mixed, search::Path::Sampled}) EXPECT_EQ(search::parse_path(search::to_string(p)), p);
  for (auto v : {pipeline::Validation::Decoupled, pipeline::Validation::Inline, pipeline::Validation::Off}) {
    EXPECT_EQ(pipeline::parse_validation(pipeline::to_string(v)), v);
  }
  try {
    search::parse_edge_set("some");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "edges must be 'all', 'deformation' or 'none', got 'some'");
  }
  EXPECT_THROW(pipeline::parse_validation("later"), base::UsageError);
}

TEST(AdaptSettings, TheCommandLineAndItsChecks) {
  pipeline::AdaptSettings s;
  s.model = "base.autoreg";
  s.manifest = "site.csv";
  s.out = "adapted.autoreg";
  Words w = pipeline::to_arguments(s);
  EXPECT_EQ(w[0], "adapt");
  EXPECT_EQ(value_of(w, "--method"), "ftm");
  EXPECT_FALSE(has(w, "--learning-rate")) << "the method's own default";
  s.learning_rate = 2e-3;
  w = pipeline::to_arguments(s);
  EXPECT_EQ(read_back(value_of(w, "--learning-rate")), 2e-3);
  pipeline::AdaptSettings bad = s;
  bad.out = "base.autoreg";
  EXPECT_THROW(pipeline::validate(bad), base::UsageError);
  bad = s;
  bad.steps = 0;
  EXPECT_THROW(pipeline::validate(bad), base::UsageError);
}

// Every job's schema: no option or keyword twice, and settings off their defaults
// written as a command line (what the supervisor's ranks and the search's watcher run)
// read back through the rows to the same command line.
template <typename S>
S read_through_rows(const base::Schema<S>& schema, const Words& w) {
  S back;
  for (size_t i = 1; i < w.size(); ++i) {
    const auto row = std::find_if(schema.begin(), schema.end(), [&](const auto& f) { return "--" + f.option == w[i]; });
    if (row == schema.end()) {
      ADD_FAILURE() << w[i] << " is no row's option";
      continue;
    }
    row->set(back, row->switch_option() ? row->switch_sets : w[++i]);
  }
  return back;
}

// A value option is its keyword with dashes (learning_rate: --learning-rate; an older
// spelling is an alias); a switch names what it does (--no-augment, --affine-only).
template <typename S>
void expect_spelt_as_keyword(const std::string& job, const base::SettingField<S>& row) {
  std::string dashed = row.keyword;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  if (!row.switch_option()) EXPECT_EQ(row.option, dashed) << job << ": keyword " << row.keyword;
}

template <typename S>
void expect_rows_read_back(const std::string& job, const base::Schema<S>& schema, const S& s) {
  std::set<std::string> options, keywords;
  for (const auto& row : schema) {
    EXPECT_TRUE(options.insert(row.option).second) << job << ": --" << row.option << " twice";
    for (const std::string& old : row.aliases) EXPECT_TRUE(options.insert(old).second) << job << ": --" << old << " twice";
    EXPECT_TRUE(keywords.insert(row.keyword).second) << job << ": keyword " << row.keyword << " twice";
    expect_spelt_as_keyword(job, row);
  }
  const Words w = base::arguments(job, schema, s);
  EXPECT_EQ(base::arguments(job, schema, read_through_rows(schema, w)), w) << job;
}

// The adapt job's schema: every setting off its default written by to_arguments and read
// back through the rows gives the same settings (what the command line does with them).
TEST(AdaptSettings, EverySettingReadsBackThroughItsRow) {
  pipeline::AdaptSettings s;
  s.model = "base.autoreg";
  s.manifest = "site.csv";
  s.out = "adapted.autoreg";
  s.method = pipeline::AdaptMethod::Finetune;
  s.steps = 7;
  s.learning_rate = 3e-4;
  s.checkpoint_every = 3;
  s.validate_every = 5;
  s.run = {"cache/", "log.jsonl", "cuda", 3, 9, true};
  const Words w = pipeline::to_arguments(s);
  const auto& schema = pipeline::adapt_schema();
  pipeline::AdaptSettings back = read_through_rows(schema, w);
  EXPECT_EQ(back.model, s.model);
  EXPECT_EQ(back.method, s.method);
  EXPECT_EQ(back.steps, 7);
  EXPECT_EQ(back.learning_rate, s.learning_rate);
  EXPECT_EQ(back.checkpoint_every, 3);
  EXPECT_EQ(back.validate_every, 5);
  EXPECT_EQ(back.run.cache, "cache/");
  EXPECT_EQ(back.run.log, "log.jsonl");
  EXPECT_EQ(back.run.device, "cuda");
  EXPECT_EQ(back.run.threads, 3);
  EXPECT_EQ(back.run.seed, 9u);
  EXPECT_TRUE(back.run.resume);
  // A value a row does not read names its option.
  try {
    schema[4].set(back, "seven");
    FAIL() << "no error";
  } catch (const base::UsageError& e) {
    EXPECT_STREQ(e.what(), "--steps must be a whole number, got 'seven'");
  }
}

TEST(JobSchemas, EveryJobsSettingsReadBackThroughTheirRows) {
  pipeline::SearchSettings sr;
  sr.manifest = "data.csv";
  sr.out = "run/";
  sr.steps = 7;
  sr.retrain_steps = 0;
  sr.grid = {64, 48, 32};
  sr.max_forward_ms = 12.5;
  sr.search.mode = search::Mode::Sequential;
  sr.search.order = search::Order::Second;
  sr.search.edges = search::EdgeSet::Deformation;
  sr.search.path = sr.search.architecture_path = search::Path::Sampled;
  sr.search.objective_scale_fixed = false;
  sr.search.augment = sr.search.async_checkpoints = false;
  sr.search.weight_lr = 0.1 + 0.2;
  sr.search.device = "cuda";
  sr.search.seed = 11;
  sr.threads = 3;
  sr.batch = 4;
  sr.validation = pipeline::Validation::Inline;
  sr.evaluate = sr.resume = true;
  sr.scale.collective_timeout_s = 30;
  expect_rows_read_back("search", pipeline::search_schema(), sr);
  EXPECT_EQ(value_of(pipeline::to_arguments(sr), "--architecture-path"), "sampled");
  EXPECT_EQ(value_of(pipeline::to_arguments(sr), "--objective-scale"), "free");

  pipeline::SegmentJob segment;
  segment.atlases = "atlases.csv";
  segment.target = "target.nii.gz";
  segment.out = "labels.nii.gz";
  segment.options.fusion.method = segmentation::Method::Weighted;
  segment.options.fusion.patch_radius = 1;
  segment.options.fusion.patch_vote = false;
  segment.options.fusion.power = 3.5;
  segment.options.registered = true;
  segment.out_inverse_fields = true;
  expect_rows_read_back("segment", pipeline::segment_schema(), segment);

  pipeline::TemplateSettings templ;
  templ.images = "subjects.csv";
  templ.out = "template/";
  templ.converged_mm = 0.05;
  templ.averaging = pipeline::Averaging::Sharpened;
  templ.initial = pipeline::parse_initial("first");
  expect_rows_read_back("template", pipeline::template_schema(), templ);

  pipeline::TrainSettings train;
  train.manifest = "data.csv";
  train.out = "model.autoreg";
  train.augment = false;
  train.run.device = "cuda";
  train.batch = 2;
  expect_rows_read_back("train", pipeline::train_schema(), train);

  pipeline::AdaptSettings adapt;
  adapt.model = "base.autoreg";
  adapt.manifest = "site.csv";
  adapt.out = "adapted.autoreg";
  expect_rows_read_back("adapt", pipeline::adapt_schema(), adapt);

  for (const pipeline::SettingRow& row : pipeline::setting_rows()) expect_spelt_as_keyword("register", row);
  for (const auto& row : pipeline::register_job_schema()) expect_spelt_as_keyword("register", row);
  for (const auto& row : pipeline::batch_schema()) expect_spelt_as_keyword("register --pairs", row);
  for (const auto& row : pipeline::pack_schema()) expect_spelt_as_keyword("pack", row);
}

// A program of one's own trains a network through the library, no command line: four
// small labelled subjects (two to validate on, pairwise), two steps.
TEST(TrainJob, AProgramTrainsThroughTheLibrary) {
  const fs::path dir = fs::temp_directory_path() / ("autoreg-jobs-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  io::Geometry g;
  g.size = {24, 22, 20};
  g.spacing = {1.0, 1.1, 1.2};
  std::ofstream csv(dir / "data.csv");
  csv << "image,labels,split\n";
  const at::Tensor r = at::linspace(-1, 1, 20).view({20, 1, 1}), q = at::linspace(-1, 1, 22).view({1, 22, 1}),
                   p = at::linspace(-1, 1, 24).view({1, 1, 24});
  for (int k = 0; k < 4; ++k) {
    const double shift = 0.08 * (k - 2);
    const at::Tensor d2 = (r - shift).pow(2) + q.pow(2) + (p + shift).pow(2);
    const at::Tensor image = 0.4 * (d2 < 0.6).to(at::kFloat) + 0.5 * (d2 < 0.2).to(at::kFloat) + 0.05 * (r + 1);
    const at::Tensor labels = (d2 < 0.6).to(at::kInt) + (d2 < 0.2).to(at::kInt);
    const std::string name = "s" + std::to_string(k);
    io::write_volume((dir / (name + ".nii.gz")).string(), {image.view({1, 1, 20, 22, 24}).contiguous(), g});
    io::write_volume((dir / (name + "_seg.nii.gz")).string(), {labels.view({1, 1, 20, 22, 24}).contiguous(), g});
    csv << name << ".nii.gz," << name << "_seg.nii.gz," << (k >= 2 ? "val" : "train") << "\n";
  }
  csv.close();
  pipeline::TrainSettings s;
  s.manifest = (dir / "data.csv").string();
  s.out = (dir / "m.autoreg").string();
  s.grid = {16, 16, 16};
  s.spacing = 1.5;
  s.steps = 2;
  s.validation = pipeline::Validation::Inline;
  s.validate_every = 2;
  const pipeline::TrainResult result = pipeline::train(s);
  EXPECT_EQ(result.steps, 2);
  EXPECT_TRUE(result.lead);
  EXPECT_TRUE(std::isfinite(result.validation_dice)) << "inline validation on the val pair";
  const registration::Model model = registration::load_model(s.out);
  EXPECT_EQ(model.info.notes.at("steps"), "2");
  EXPECT_TRUE(fs::exists(s.out + ".log.jsonl"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace autoreg::test
