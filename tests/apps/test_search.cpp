// `autoreg search` as a user runs it, on a tiny synthetic dataset: the outputs (genotype,
// its JSON, the retrained model, the log and the report) and the model registering; a
// resumed finished run; refusals; an unreadable row skipped; SIGTERM leaving a
// checkpoint that --resume continues from.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "autoreg/io/volume.h"
#include "autoreg/registration/genotype.h"
#include "autoreg/registration/model_file.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class Search : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    write_sphere_subjects(5);
    manifest("data.csv", {"train", "train", "train", "val", "val"});
  }
  void manifest(const std::string& name, const std::vector<std::string>& splits, const std::string& extra = "") {
    std::ofstream csv(path(name));
    csv << "image,labels,split\n";
    for (size_t s = 0; s < splits.size(); ++s) {
      csv << "s" << s << ".nii.gz,s" << s << "_seg.nii.gz," << splits[s] << "\n";
    }
    csv << extra;
  }
  std::string search(const std::string& manifest, const std::string& out) const {
    return "search --manifest " + path(manifest) + " --out " + path(out) +
           " --grid 16x16x16 --spacing 1.5 --threads 2 --warmup 0.34 --arch-every 1 --objective-every 2"
           " --validate-every 3 --checkpoint-every 2";
  }
};

TEST_F(Search, FindsExportsAndTheModelRegisters) {
  Result r = run(search("data.csv", "out") + " --steps 6 --retrain-steps 3");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("pairwise mode"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("search step 6/6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("derived genotype: "), std::string::npos) << r.output;
  for (const char* f : {"genotype.txt", "genotype.json", "model.autoreg", "search.log.jsonl", "retrain.log.jsonl",
                        "report.html", "op_cost.json", "search.ckpt", "retrain.ckpt"}) {
    EXPECT_TRUE(fs::exists(path("out/") + f)) << f;
  }
  // The genotype file is what `train --genotype` reads; the JSON agrees with it.
  const registration::Genotype g = registration::read_genotype(path("out/genotype.txt"));
  std::ifstream json_file(path("out/genotype.json"));
  const nlohmann::json j = nlohmann::json::parse(json_file);
  for (int e = 0; e < registration::kGenotypeEdges; ++e) EXPECT_EQ(j["genotype"][e].get<std::string>(), g.edges[e]);
  EXPECT_EQ(j["probabilities"].size(), 12u);
  EXPECT_EQ(j["entropy_start"].size(), 12u);
  EXPECT_GT(j["budget_ms"].get<double>(), 0);
  EXPECT_LE(j["predicted_forward_ms"].get<double>(), j["budget_ms"].get<double>());
  EXPECT_EQ(j["retrain_steps"].get<int>(), 3);
  for (const char* term : {"ncc9", "ncc7_half", "ncc5_quarter", "smoothness"}) EXPECT_GT(j["lambda"][term].get<double>(), 0);
  // The model: the derived genotype, the searched λ in its notes.
  const registration::Model m = registration::load_model(path("out/model.autoreg"));
  EXPECT_EQ(m.info.network.genotype, g);
  EXPECT_EQ(m.info.notes.at("objective"), j["objective"].get<std::string>());
  EXPECT_NE(m.info.notes.at("found_by").find("autoreg search"), std::string::npos);
  int lines = 0;
  std::ifstream log(path("out/search.log.jsonl"));
  for (std::string line; std::getline(log, line); ++lines) {
    const auto l = nlohmann::json::parse(line);
    EXPECT_EQ(l["step"].get<int>(), lines + 1);
    EXPECT_EQ(l["probabilities"].size(), 12u);
  }
  EXPECT_EQ(lines, 6);
  std::ifstream page(path("out/report.html"));
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<svg"), std::string::npos);

  r = run("register --fixed " + path("s0.nii.gz") + " --moving " + path("s1.nii.gz") + " --out-warped " +
          path("w.nii.gz") + " --out-field " + path("f.nii.gz") + " --model " + path("out/model.autoreg"));
  EXPECT_EQ(r.code, 0) << r.output;

  // A finished search resumed: nothing left to search, retraining already done.
  r = run(search("data.csv", "out") + " --steps 6 --retrain-steps 3 --resume");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed the search from"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("search step"), std::string::npos) << r.output;
  // Without --resume a folder that holds a search is refused.
  r = run(search("data.csv", "out") + " --steps 6");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("holds a search already"), std::string::npos) << r.output;
}

TEST_F(Search, RefusesDataItCannotSearchOn) {
  manifest("noval.csv", {"train", "train", "train", "train", "train"});
  Result r = run(search("noval.csv", "a") + " --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("no 'val' rows"), std::string::npos) << r.output;
  std::ofstream(path("unlabelled.csv")) << "image,labels,split\ns0.nii.gz,s0_seg.nii.gz,train\ns1.nii.gz,s1_seg.nii.gz,train\n"
                                           "s2.nii.gz,,val\ns3.nii.gz,,val\n";
  r = run(search("unlabelled.csv", "b") + " --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("labelled validation subjects"), std::string::npos) << r.output;
  r = run(search("data.csv", "c") + " --steps 2 --max-forward-ms 0.001");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--max-forward-ms: a forward-time budget of 0.0 ms cannot be met"), std::string::npos) << r.output;
  r = run(search("data.csv", "e") + " --steps 2 --op-cost " + path("nothing.json"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("nothing.json") + ": no such operation-cost file"), std::string::npos) << r.output;
  std::ofstream(path("bad_cost.json")) << "{\"grid\": [16, 16, 16]}";
  r = run(search("data.csv", "f") + " --steps 2 --op-cost " + path("bad_cost.json"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("bad_cost.json") + ": malformed operation costs"), std::string::npos) << r.output;
  r = run(search("data.csv", "d") + " --steps 2 --budget-minutes 1");
  EXPECT_EQ(r.code, 1) << r.output;
}

// The second stage of a proxy search: λ alone, on a given architecture, at the final grid.
TEST_F(Search, SearchesTheObjectiveAloneOnAGivenGenotype) {
  registration::Genotype g = registration::Genotype::standard();
  g.edges[9] = "conv_1x1";
  {
    std::ofstream file(path("given.txt"));
    for (const auto& op : g.edges) file << op << "\n";
  }
  Result r = run(search("data.csv", "lambda") + " --steps 3 --retrain-steps 2 --edges none --genotype " +
                 path("given.txt"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(registration::read_genotype(path("lambda/genotype.txt")), g);
  std::ifstream json_file(path("lambda/genotype.json"));
  const nlohmann::json summary = nlohmann::json::parse(json_file);
  EXPECT_NE(summary["lambda"]["smoothness"].get<double>(), 1.0);  // λ moved
  EXPECT_EQ(registration::load_model(path("lambda/model.autoreg")).info.network.genotype, g);
  r = run(search("data.csv", "nothing") + " --steps 3 --edges none --terms none");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("nothing to search"), std::string::npos) << r.output;
  r = run(search("data.csv", "missing") + " --steps 3 --genotype " + path("missing.txt"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("missing.txt")), std::string::npos) << r.output;
}

TEST_F(Search, SkipsAnUnreadableRow) {
  std::ofstream(path("broken.nii.gz")) << "this is not a volume";
  manifest("broken.csv", {"train", "train", "train", "val", "val"}, "broken.nii.gz,,train\n");
  Result r = run(search("broken.csv", "out") + " --steps 2 --retrain-steps 0");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped: " + path("broken.csv") + " line 7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 training, 2 validation"), std::string::npos) << r.output;
  // And diagnosed in the run's failures file.
  std::ifstream failures(path("out/failures.jsonl"));
  std::string line;
  ASSERT_TRUE(static_cast<bool>(std::getline(failures, line)));
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["class"], "unreadable_data");
  EXPECT_EQ(j["action"], "skipped");
  // More unreadable rows than allowed stop the run.
  r = run(search("broken.csv", "out2") + " --steps 2 --retrain-steps 0 --max-unreadable 0.1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("rows cannot be read"), std::string::npos) << r.output;
}

TEST_F(Search, TerminatedWritesACheckpointAndResumes) {
  // Long enough that the signal arrives while it runs.
  const std::string cmd = search("data.csv", "out") + " --steps 100000 --retrain-steps 0";
  const auto step_after = [](const std::string& text, const std::string& marker) {
    const size_t at = text.find(marker);
    return at == std::string::npos ? -1L : std::stol(text.substr(at + marker.size()));
  };
  Result r = run_with_signal(cmd, 12);
  EXPECT_EQ(r.code, 4) << r.output;
  const long stopped = step_after(r.output, "interrupted (search) at step ");
  EXPECT_GT(stopped, 0) << r.output;
  EXPECT_TRUE(fs::exists(path("out/search.ckpt")));
  r = run_with_signal(cmd + " --resume", 12);
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_EQ(step_after(r.output, "resumed the search from " + path("out/search.ckpt") + " at step "), stopped) << r.output;
  EXPECT_GT(step_after(r.output, "interrupted (search) at step "), stopped) << r.output;
}

}  // namespace
}  // namespace autoreg::test
