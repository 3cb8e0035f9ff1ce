// `autoreg adapt` as a user runs it, on a tiny synthetic model and a "new scanner" made
// by remapping the training images' intensities: the adapted model file and what it
// records, the frozen weights, exact --resume, register with the adapted model, the
// finetune method, and bad inputs (nothing written).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <sstream>

#include "autoreg/io/volume.h"
#include "autoreg/registration/model_file.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class Adapt : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    write_sphere_subjects(5);  // sN.nii.gz, sN_seg.nii.gz
    std::ofstream source(path("source.csv")), target(path("target.csv"));
    source << "image,labels,split\n";
    target << "image,labels,split\n";
    for (int s = 0; s < 5; ++s) {
      const std::string name = "s" + std::to_string(s);
      // The new scanner: bright becomes dark, grey bright.
      const io::Volume source_scan = io::read_volume(path(name + ".nii.gz"));
      const at::Tensor& image = source_scan.data;
      io::write_volume(path("t" + std::to_string(s) + ".nii.gz"), {4 * image * (1 - image), source_scan.geometry});
      source << name << ".nii.gz," << name << "_seg.nii.gz," << (s == 4 ? "val" : "train") << "\n";
      // Three unlabelled target scans adapt; two labelled ones pick the best step.
      if (s < 3) target << "t" << s << ".nii.gz,,train\n";
      else target << "t" << s << ".nii.gz," << name << "_seg.nii.gz,val\n";
    }
    source.close();
    target.close();
    std::ofstream(path("unlabelled.csv")) << "image,labels,split\nt0.nii.gz,,train\nt1.nii.gz,,train\nt2.nii.gz,,train\n";
    const Result r = run("train --manifest " + path("source.csv") + " --out " + path("base.autoreg") +
                         " --grid 16x16x16 --spacing 1.5 --steps 3 --validation off --threads 2 --lr 1e-3");
    ASSERT_EQ(r.code, 0) << r.output;
  }
  std::string adapt(const std::string& out, const std::string& more) const {
    return "adapt --model " + path("base.autoreg") + " --manifest " + path("target.csv") + " --out " + path(out) +
           " --cache " + path("cache") + " --threads 2 --checkpoint-every 2 --validate-every 2 " + more;
  }
  static std::string bytes(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

TEST_F(Adapt, FtmTrainsTheTransformsAloneResumesAndRegisters) {
  Result r = run(adapt("a.autoreg", "--steps 4"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("3 subjects"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("training 672 parameters"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("adapt 4/4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("best validation Dice"), std::string::npos) << r.output;
  const registration::Model base = registration::load_model(path("base.autoreg"));
  const registration::Model a = registration::load_model(path("a.autoreg"));
  ASSERT_TRUE(a.network->has_feature_transforms());
  EXPECT_EQ(bytes(path("a.autoreg")).rfind("AUTOREG MODEL\nformat 3\n", 0), 0u);
  EXPECT_EQ(registration::weights_checksum(*a.network), registration::weights_checksum(*base.network));
  EXPECT_EQ(a.info.notes.at("adapted_from"), "base.autoreg");
  EXPECT_EQ(a.info.notes.at("adapted_from_weights"), registration::weights_checksum(*base.network));
  EXPECT_EQ(a.info.notes.at("adapt_method"), "ftm");
  EXPECT_EQ(a.info.notes.at("adapt_subjects"), "3");
  EXPECT_EQ(a.info.notes.at("adapt_parameters"), "672");
  EXPECT_TRUE(a.info.notes.count("adapt_seconds"));
  EXPECT_TRUE(a.info.notes.count("adapt_validation_dice"));
  EXPECT_TRUE(fs::exists(path("a.autoreg.best"))) << "the best validated state, kept for --resume";
  // The unadapted model is validated too (step 0): adaptation that does not help is not kept.
  EXPECT_NE(r.output.find("validation Dice before adaptation"), std::string::npos) << r.output;

  // Stopped at step 2 and resumed to 4: the same model as the straight run (without
  // validation rows both keep their last step).
  const auto unlabelled = [&](const std::string& out, const std::string& more) {
    return "adapt --model " + path("base.autoreg") + " --manifest " + path("unlabelled.csv") + " --out " + path(out) +
           " --cache " + path("cache") + " --threads 2 --checkpoint-every 2 " + more;
  };
  const std::string quiet = "--steps 4";
  r = run(unlabelled("straight.autoreg", quiet));
  ASSERT_EQ(r.code, 0) << r.output;
  r = run(unlabelled("b.autoreg", "--steps 2"));
  ASSERT_EQ(r.code, 0) << r.output;
  r = run(unlabelled("b.autoreg", quiet + " --resume"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from " + path("b.autoreg.ckpt") + " at step 2"), std::string::npos) << r.output;
  const registration::Model straight = registration::load_model(path("straight.autoreg"));
  const registration::Model resumed = registration::load_model(path("b.autoreg"));
  const auto ps = straight.network->named_parameters(), pr = resumed.network->named_parameters();
  ASSERT_EQ(ps.size(), pr.size());
  for (const auto& p : ps) EXPECT_TRUE(at::equal(p.value(), pr[p.key()])) << p.key();
  double moved = 0;
  for (const at::Tensor& t : straight.network->feature_transform_parameters()) moved += (t - t.round()).abs().sum().item<double>();
  EXPECT_GT(moved, 0) << "γ and β were trained";
  EXPECT_EQ(registration::weights_checksum(*straight.network), registration::weights_checksum(*base.network));
  // Another method does not resume this run's checkpoint.
  r = run(unlabelled("b.autoreg", quiet + " --resume --method finetune"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("method was ftm, is finetune now"), std::string::npos) << r.output;

  // register uses the transformations.
  r = run("register --model " + path("a.autoreg") + " --moving " + path("t1.nii.gz") + " --fixed " + path("t2.nii.gz") +
          " --out-field " + path("field.nii.gz") + " --out-warped " + path("warped.nii.gz") + " --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
}

TEST_F(Adapt, FinetuneChangesTheWeightsAndOneSubjectPairsWithItself) {
  Result r = run("adapt --model " + path("base.autoreg") + " --manifest " + path("unlabelled.csv") + " --out " +
                 path("f.autoreg") + " --steps 2 --method finetune --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
  const registration::Model base = registration::load_model(path("base.autoreg"));
  const registration::Model f = registration::load_model(path("f.autoreg"));
  EXPECT_FALSE(f.network->has_feature_transforms());
  EXPECT_EQ(bytes(path("f.autoreg")).rfind("AUTOREG MODEL\nformat 2\n", 0), 0u);
  EXPECT_NE(registration::weights_checksum(*f.network), registration::weights_checksum(*base.network));
  EXPECT_EQ(f.info.notes.at("adapt_method"), "finetune");

  std::ofstream(path("one.csv")) << "image,labels,split\nt0.nii.gz,,train\n";
  r = run("adapt --model " + path("base.autoreg") + " --manifest " + path("one.csv") + " --out " + path("one.autoreg") +
          " --steps 2 --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 subject (paired with deformed copies of itself)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no validation"), std::string::npos) << r.output;
}

// train --feature-noise: the model gets the transformations, left at the identity (the
// noise perturbs them in training; the weights learn to live with it), and adapts.
TEST_F(Adapt, TrainingWithFeatureNoise) {
  Result r = run("train --manifest " + path("source.csv") + " --out " + path("noisy.autoreg") +
                 " --grid 16x16x16 --spacing 1.5 --steps 3 --validation off --threads 2 --feature-noise 0.2");
  ASSERT_EQ(r.code, 0) << r.output;
  const registration::Model noisy = registration::load_model(path("noisy.autoreg"));
  ASSERT_TRUE(noisy.network->has_feature_transforms());
  EXPECT_EQ(noisy.info.notes.at("feature_noise"), "0.200000");
  const auto ftm = noisy.network->feature_transform_parameters();
  for (size_t k = 0; k < ftm.size(); k += 2) {
    EXPECT_TRUE(at::equal(ftm[k], at::ones_like(ftm[k])));
    EXPECT_TRUE(at::equal(ftm[k + 1], at::zeros_like(ftm[k + 1])));
  }
  // The same run without noise ends with other weights: the noise reached the training.
  r = run("train --manifest " + path("source.csv") + " --out " + path("quiet.autoreg") +
          " --grid 16x16x16 --spacing 1.5 --steps 3 --validation off --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
  const registration::Model quiet = registration::load_model(path("quiet.autoreg"));
  EXPECT_NE(registration::weights_checksum(*quiet.network), registration::weights_checksum(*noisy.network));
  r = run("adapt --model " + path("noisy.autoreg") + " --manifest " + path("target.csv") + " --out " + path("na.autoreg") +
          " --cache " + path("cache") + " --steps 2 --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
}

TEST_F(Adapt, BadInputsAreRefusedAndNothingIsWritten) {
  // A manifest whose only image is not an image.
  std::ofstream(path("junk.nii.gz")) << "not a volume";
  std::ofstream(path("junk.csv")) << "image,labels,split\njunk.nii.gz,,train\n";
  Result r = run("adapt --model " + path("base.autoreg") + " --manifest " + path("junk.csv") + " --out " +
                 path("x.autoreg") + " --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("junk.nii.gz"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("x.autoreg.cache"))) << "the cache folder it made is removed";
  // A row without an image: adaptation needs the new domain's images.
  std::ofstream(path("labels_only.csv")) << "image,labels,split\n,s0_seg.nii.gz,train\nt1.nii.gz,,train\n";
  r = run("adapt --model " + path("base.autoreg") + " --manifest " + path("labels_only.csv") + " --out " +
          path("x.autoreg") + " --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("labels_only.csv:2"), std::string::npos) << r.output;
  // A base model that is not one.
  r = run("adapt --model " + path("junk.nii.gz") + " --manifest " + path("target.csv") + " --out " +
          path("x.autoreg") + " --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("not an autoreg model"), std::string::npos) << r.output;
  // The output is the model being adapted (spelled another way too).
  const std::string before = bytes(path("base.autoreg"));
  for (const std::string& out : {path("base.autoreg"), (dir_ / "." / "base.autoreg").string()}) {
    r = run("adapt --model " + path("base.autoreg") + " --manifest " + path("target.csv") + " --out " + out + " --steps 2");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_NE(r.output.find("refusing to overwrite"), std::string::npos) << r.output;
  }
  // Nor is a file the run writes beside its output (the best state, the checkpoint).
  fs::copy_file(path("base.autoreg"), path("y.autoreg.best"));
  r = run("adapt --model " + path("y.autoreg.best") + " --manifest " + path("target.csv") + " --out " + path("y.autoreg") + " --steps 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(fs::exists(path("y.autoreg.best")));
  EXPECT_EQ(bytes(path("base.autoreg")), before);
  r = run(adapt("x.autoreg", "--steps 0"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_FALSE(fs::exists(path("x.autoreg")));
  EXPECT_FALSE(fs::exists(path("x.autoreg.ckpt")));
  EXPECT_FALSE(fs::exists(path("x.autoreg.log.jsonl")));
}

}  // namespace
}  // namespace autoreg::test
