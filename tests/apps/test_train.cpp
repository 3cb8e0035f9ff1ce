// `autoreg train` and `autoreg register --model` as a user runs them, on a tiny
// synthetic dataset: a manifest, the model file, the log, checkpoints and resume.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "autoreg/io/volume.h"
#include "autoreg/registration/train.h"
#include "autoreg/registration/training_set_file.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class Train : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    io::Geometry g;
    g.size = {24, 22, 20};
    g.spacing = {1.0, 1.1, 1.2};
    g.origin = {10, -4, 2};
    std::ofstream csv(path("data.csv"));
    csv << "image,labels,split\n";
    for (int s = 0; s < 5; ++s) {
      const auto [image, labels] = sphere_subject(s, /*ramp=*/false);
      const std::string name = "s" + std::to_string(s);
      io::write_volume(path(name + ".nii.gz"), {image, g});
      io::write_volume(path(name + "_seg.nii.gz"), {labels, g});
      const char* split = s == 0 ? "atlas" : s == 4 ? "val" : "train";
      // One training subject has only its label map: its image is synthesised.
      csv << (s == 3 ? "" : name + ".nii.gz") << "," << name << "_seg.nii.gz," << split << "\n";
    }
  }
  int lines_of(const std::string& file) const {
    std::ifstream in(file);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.find("\"step\":") != std::string::npos;
    return n;
  }
};

TEST_F(Train, TrainsResumesAndRegistersWithTheModel) {
  const std::string base = "train --manifest " + path("data.csv") + " --out " + path("m.autoreg") +
                           " --grid 16x16x16 --spacing 1.5 --checkpoint-every 2 --validate-every 2 --threads 2";
  Result r = run(base + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("atlas mode"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step 4/4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("validation Dice 0."), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(path("m.autoreg")));
  EXPECT_TRUE(fs::exists(path("m.autoreg.ckpt")));
  EXPECT_EQ(lines_of(path("m.autoreg.log.jsonl")), 4);

  // A run stopped between checkpoints logged steps past the checkpoint, the last line cut
  // short: resuming cuts the log back to the checkpoint's step.
  std::ofstream(path("m.autoreg.log.jsonl"), std::ios::app) << "{\"step\":5,\"loss\":1,\"seconds\":99}\n{\"step\":6,\"lo";
  // A second run reads the preprocessed volumes from the cache.
  r = run(base + " --steps 6 --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("from the cache"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("aligned and resampled"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resumed from " + path("m.autoreg.ckpt") + " at step 4"), std::string::npos) << r.output;
  EXPECT_EQ(lines_of(path("m.autoreg.log.jsonl")), 6);
  {
    std::ifstream in(path("m.autoreg.log.jsonl"));
    std::string line;
    int step = 0;
    double seconds = 0;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line);
      EXPECT_EQ(j["step"].get<int>(), ++step) << line;
      EXPECT_GE(j["seconds"].get<double>(), seconds) << "seconds count the whole training: " << line;
      seconds = j["seconds"].get<double>();
    }
    EXPECT_LT(seconds, 99);
  }
  // Another run's options are refused, naming the option.
  r = run(base + " --steps 8 --resume --lr 1e-3");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("lr was 0.0001, is 0.001 now"), std::string::npos) << r.output;

  r = run("register --fixed " + path("s0.nii.gz") + " --moving " + path("s1.nii.gz") + " --out-warped " +
          path("w.nii.gz") + " --out-field " + path("f.nii.gz") + " --model " + path("m.autoreg") +
          " --refine 3 --json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"network\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"refine\""), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(path("w.nii.gz")));

  // --model default finds the model named by AUTOREG_DEFAULT_MODEL.
  ::setenv("AUTOREG_DEFAULT_MODEL", path("m.autoreg").c_str(), 1);
  r = run("register --fixed " + path("s0.nii.gz") + " --moving " + path("s1.nii.gz") + " --out-warped " +
          path("w3.nii.gz") + " --out-field " + path("f3.nii.gz") + " --model default --no-affine");
  ::unsetenv("AUTOREG_DEFAULT_MODEL");
  EXPECT_EQ(r.code, 0) << r.output;
}

// The objective's weights name the same loss as the similarity and λ options.
TEST_F(Train, ObjectiveWeightsAreTheSimilarityAndLambdaOptions) {
  const std::string base = "train --manifest " + path("data.csv") + " --grid 16x16x16 --spacing 1.5 --steps 2 --threads 2";
  Result a = run(base + " --out " + path("a.autoreg") + " --lambda 0.5");
  ASSERT_EQ(a.code, 0) << a.output;
  Result b = run(base + " --out " + path("b.autoreg") + " --objective ncc9=1,smoothness=0.5");
  ASSERT_EQ(b.code, 0) << b.output;
  const auto losses = [&](const std::string& log) {
    std::ifstream in(log);
    std::vector<double> v;
    for (std::string line; std::getline(in, line);) v.push_back(nlohmann::json::parse(line)["loss"].get<double>());
    return v;
  };
  const auto la = losses(path("a.autoreg.log.jsonl")), lb = losses(path("b.autoreg.log.jsonl"));
  ASSERT_EQ(la.size(), 2u);
  EXPECT_EQ(la, lb);
  Result c = run(base + " --out " + path("c.autoreg") + " --objective ncc9=1 --lambda 2");
  EXPECT_EQ(c.code, 1) << c.output;
  c = run(base + " --out " + path("c.autoreg") + " --objective ncc10=1");
  EXPECT_EQ(c.code, 1) << c.output;
  EXPECT_NE(c.output.find("--objective: objective weights: 'ncc10=1'"), std::string::npos) << c.output;
}

TEST_F(Train, BadModelsAndOptions) {
  std::ofstream(path("fake.autoreg")) << "not a model\n";
  const std::string io = "register --fixed " + path("s0.nii.gz") + " --moving " + path("s1.nii.gz") +
                         " --out-warped " + path("w.nii.gz") + " --out-field " + path("f.nii.gz");
  Result r = run(io + " --model " + path("fake.autoreg"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("fake.autoreg") + ": not an autoreg model file"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("w.nii.gz")));
  r = run(io + " --model " + path("fake.autoreg") + " --iterations 10,10");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--iterations sets instance optimisation"), std::string::npos) << r.output;
  r = run(io + " --refine 5");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--refine needs --model"), std::string::npos) << r.output;

  const std::string base = "train --manifest " + path("data.csv") + " --out " + path("m.autoreg") + " --steps 2";
  r = run(base + " --resume");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no checkpoint"), std::string::npos) << r.output;
  r = run(base + " --log " + path("data.csv"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("is also an input"), std::string::npos) << r.output;
  r = run(base.substr(0, base.find(" --steps")) + " --epochs 0");
  EXPECT_EQ(r.code, 1) << r.output;
  r = run(base + " --log " + path("no/such/folder/log.jsonl"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("output folder does not exist"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("preprocess"), std::string::npos) << "checked before any work: " << r.output;
  r = run(base + " --grid 16x16");
  EXPECT_EQ(r.code, 1) << r.output;
  r = run(base + " --grid 18x16x16");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("multiples of 4"), std::string::npos) << r.output;
  std::ofstream(path("bad.genotype")) << "conv_3x3 conv_3x3\n";
  r = run(base + " --genotype " + path("bad.genotype"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("bad.genotype") + ": a genotype names 12 operations"), std::string::npos) << r.output;
  std::ofstream(path("bad.csv")) << "image,labels\nmissing.nii.gz,\n";
  r = run("train --manifest " + path("bad.csv") + " --out " + path("m.autoreg"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("bad.csv") + ":2:"), std::string::npos) << r.output;
}

// `autoreg pack`: the manifest's subjects as one file that reads without ITK or the
// source volumes, on the grid train would use; bad input as everywhere.
TEST_F(Train, PacksATrainingSetThatReadsWithoutItsSources) {
  Result r = run("pack --manifest " + path("data.csv") + " --out " + path("set.trainset") +
                 " --grid 16x16x16 --spacing 1.5 --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("3 training, 1 validation subjects and an atlas"), std::string::npos) << r.output;
  for (int s = 0; s < 5; ++s) fs::remove(path("s" + std::to_string(s) + ".nii.gz"));  // not needed any more
  const registration::TrainingSetFile set = registration::read_training_set(path("set.trainset"));
  EXPECT_EQ(set.info.grid, (std::array<int64_t, 3>{16, 16, 16}));
  ASSERT_EQ(set.set.train.size(), 3u);
  ASSERT_TRUE(set.set.atlas.has_value());
  EXPECT_EQ(set.set.train[0].image.sizes(), at::IntArrayRef({1, 1, 16, 16, 16}));
  EXPECT_TRUE(set.set.train[0].labels.defined());
  // The trainer takes it as it is.
  registration::ModelInfo info = set.info;
  at::manual_seed(0);
  registration::Model model = registration::make_model(info);
  registration::TrainOptions o;
  o.steps = 1;
  registration::Trainer trainer(model, set.set, o);
  EXPECT_TRUE(std::isfinite(trainer.train_step().loss));

  EXPECT_EQ(run("pack --manifest " + path("missing.csv") + " --out " + path("x.trainset")).code, 2);
  EXPECT_EQ(run("pack --manifest " + path("data.csv") + " --out " + path("data.csv")).code, 1);
  EXPECT_EQ(run("pack --manifest " + path("data.csv") + " --out " + path("x.trainset") + " --grid 15x16x16").code, 1);
  EXPECT_FALSE(fs::exists(path("x.trainset")));
}

}  // namespace
}  // namespace autoreg::test
