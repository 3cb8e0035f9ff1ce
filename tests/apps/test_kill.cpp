// Crash consistency: `autoreg register`, `autoreg train` and `autoreg search` killed with
// SIGKILL at many moments of their runs. After every kill, each output path either does not exist or holds
// a complete file that reads back (volumes and fields to the end of their gzip streams,
// models and checkpoints through their checksums), and no input has changed; a training
// run killed again and again and resumed each time ends with the same weights, bit for
// bit, as one that ran straight through, and a search (with its retraining) ends with the
// same genotype and model.
//
// AUTOREG_KILLS sets the number of kills (default 18, a third per command;
// scripts/kill-test.sh runs hundreds); a run that ends before its moment is not counted,
// and another moment is drawn. The moments are spread uniformly over an uninterrupted run's length.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>

#include "autoreg/io/field.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "autoreg/registration/archive.h"
#include "autoreg/registration/genotype.h"
#include "autoreg/registration/model_file.h"
#include "cli.h"

extern char** environ;

namespace autoreg::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

struct Outcome {
  bool killed;         // false: the run ended by itself first
  int code;            // its exit code when it ended by itself
  double seconds = 0;  // how long it ran
};

// Runs autoreg and sends SIGKILL after `seconds` unless it has ended by then.
Outcome run_and_kill(const std::string& args, double seconds) {
  const pid_t pid = spawn_quietly(args);
  if (pid < 0) return {false, -1};
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  const auto ran = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  int status = 0;
  while (Clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return {false, WIFEXITED(status) ? WEXITSTATUS(status) : -1, ran()};
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return {true, -1, ran()};
  return {false, WIFEXITED(status) ? WEXITSTATUS(status) : -1, ran()};
}

int kills_wanted() {
  const char* env = std::getenv("AUTOREG_KILLS");
  return env ? std::max(3, std::atoi(env)) : 18;
}

// This command's share of the kills: a third each.
int kills_for(int command) { return (kills_wanted() + 2 - command) / 3; }

class Kill : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    // Register inputs large enough that reading, registering and writing each take a
    // while (48³, smooth): the kills land in every stage.
    io::Geometry g;
    g.size = {48, 48, 48};
    g.spacing = {2, 2, 2};
    at::manual_seed(3);
    const auto smooth = [](int64_t n) {
      return at::upsample_trilinear3d(at::rand({1, 1, 6, 6, 6}), {n, n, n}, true);
    };
    io::write_volume(path("fixed.nii.gz"), {smooth(48), g});
    const at::Tensor moving = smooth(48);
    io::write_volume(path("moving48.nii.gz"), {moving, g});
    io::write_volume(path("moving48_labels.nii.gz"), {(moving * 4).floor().to(at::kInt), g});
    // A pairwise training set.
    io::Geometry t;
    t.size = {24, 22, 20};
    std::ofstream csv(path("data.csv"));
    csv << "image,labels,split\n";
    for (int s = 0; s < 4; ++s) {
      const auto [image, labels] = sphere_subject(s, /*ramp=*/true);
      const std::string name = "s" + std::to_string(s);
      io::write_volume(path(name + ".nii.gz"), {image, t});
      io::write_volume(path(name + "_seg.nii.gz"), {labels, t});
      csv << name << ".nii.gz," << name << "_seg.nii.gz," << (s == 3 ? "val" : "train") << "\n";
    }
    csv.close();
    inputs_ = snapshot();
  }

  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.is_regular_file()) files[e.path().filename().string()] = file_bytes(e.path());
    }
    return files;
  }

  // Every input is as it was.
  void expect_inputs_unchanged(const std::string& when) {
    const auto now = snapshot();
    for (const auto& [name, bytes] : inputs_) {
      const auto it = now.find(name);
      EXPECT_TRUE(it != now.end() && it->second == bytes) << name << " changed " << when;
    }
  }

  // `check` reads the file at `p` if it exists; a throw is a partial or corrupt output.
  void expect_whole(const std::string& p, const std::function<void(const std::string&)>& check, const std::string& when) {
    if (!fs::exists(p)) return;
    ++outputs_seen_;
    try {
      check(p);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "partial or corrupt output " << when << ": " << e.what();
    }
  }

  // Temporary files a killed run could not remove (hidden or suffixed names beside the
  // outputs; never at an output's path).
  int leftovers() const {
    int n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      n += name.find(".autoreg-tmp") != std::string::npos || name.find(".tmp") != std::string::npos;
    }
    return n;
  }

  std::map<std::string, std::string> inputs_;
  int outputs_seen_ = 0;
};

// The two models have the same parameters, bit for bit.
bool same_weights(const registration::Model& a_model, const std::string& p) {
  const registration::Model m = registration::load_model(p);
  const auto a = a_model.network->named_parameters(), b = m.network->named_parameters();
  if (a.size() != b.size()) return false;
  for (const auto& item : a) {
    if (!b.contains(item.key()) || !at::equal(item.value(), b[item.key()])) return false;
  }
  return true;
}

TEST_F(Kill, RegisterLeavesWholeOutputsOrNone) {
  const std::string args = "register --fixed " + path("fixed.nii.gz") + " --moving " + path("moving48.nii.gz") +
                           " --moving-labels " + path("moving48_labels.nii.gz") + " --out-labels " + path("l.nii.gz") +
                           " --out-warped " + path("w.nii.gz") + " --out-field " + path("f.nii.gz") +
                           " --out-affine " + path("a.tfm") + " --iterations 20,10 --threads 2";
  const auto start = Clock::now();
  ASSERT_EQ(run_and_kill(args, 600).code, 0);
  const double full = std::chrono::duration<double>(Clock::now() - start).count();
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> moment(0, full);  // shrinks to a faster run's time
  int killed = 0;
  const int kills = kills_for(0);
  // Until `kills` runs were killed (a moment past a run's end kills nothing).
  for (int k = 0; killed < kills && k < 3 * kills; ++k) {
    for (const char* o : {"w.nii.gz", "f.nii.gz", "l.nii.gz", "a.tfm"}) fs::remove(path(o));
    const double at = moment(rng);
    const Outcome out = run_and_kill(args, at);
    killed += out.killed;
    if (!out.killed) EXPECT_EQ(out.code, 0);
    // A run that ended before the moment ran faster than the first one (which may have
    // shared the cores with other tests): later moments fall within this run's time.
    if (!out.killed && out.seconds < full) moment = std::uniform_real_distribution<double>(0, out.seconds);
    const std::string when = "after a kill at " + std::to_string(at) + " s";
    expect_whole(path("w.nii.gz"), [](const std::string& p) { io::read_volume(p); }, when);
    expect_whole(path("l.nii.gz"), [](const std::string& p) { io::read_volume(p, io::PixelKind::Labels); }, when);
    expect_whole(path("f.nii.gz"), [](const std::string& p) { io::read_displacement_field(p); }, when);
    expect_whole(path("a.tfm"), [](const std::string& p) { io::read_affine(p); }, when);
    expect_inputs_unchanged(when);
  }
  std::printf("register: %d runs killed (uninterrupted run %.2f s), %d outputs found whole, %d temporaries left\n",
              killed, full, outputs_seen_, leftovers());
  EXPECT_EQ(killed, kills);
}

// Where two training runs (outputs `a`.autoreg and `b`.autoreg, caches `a`.cache and
// `b`.cache) part: the cached volumes that differ, and the first logged step whose loss
// differs. For the failure message of a resumed run that ended elsewhere.
std::string where_they_part(const std::string& a, const std::string& b) {
  std::string said;
  for (const auto& e : fs::directory_iterator(a + ".cache")) {
    const fs::path other = fs::path(b + ".cache") / e.path().filename();
    if (!fs::exists(other)) said += "cache: " + e.path().filename().string() + " missing in " + b + ".cache\n";
    else if (file_bytes(e.path()) != file_bytes(other)) said += "cache: " + e.path().filename().string() + " differs\n";
  }
  const auto losses = [](const std::string& log) {
    std::map<int64_t, double> by_step;  // the last line of each step (a resumed run repeats steps)
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("step") && j.contains("loss")) by_step[j["step"].get<int64_t>()] = j["loss"].get<double>();
    }
    return by_step;
  };
  const auto la = losses(a + ".autoreg.log.jsonl"), lb = losses(b + ".autoreg.log.jsonl");
  for (const auto& [step, loss] : la) {
    const auto it = lb.find(step);
    if (it == lb.end() || it->second != loss) {
      said += "log: step " + std::to_string(step) + " is the first whose loss differs (" + std::to_string(loss) + " against " +
              (it == lb.end() ? std::string("none") : std::to_string(it->second)) + ")\n";
      break;
    }
  }
  return said.empty() ? "the caches and the logged losses agree" : said;
}

TEST_F(Kill, TrainResumedAfterEveryKillEndsAsAnUninterruptedRun) {
  const std::string base = "train --manifest " + path("data.csv") +
                           " --grid 16x16x16 --spacing 1.5 --steps 6 --checkpoint-every 1 --validate-every 3 --threads 2";
  const auto start = Clock::now();
  ASSERT_EQ(run_and_kill(base + " --out " + path("ref.autoreg") + " --cache " + path("ref.cache"), 600).code, 0);
  const double full = std::chrono::duration<double>(Clock::now() - start).count();
  const registration::Model ref = registration::load_model(path("ref.autoreg"));
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> moment(0, full);
  const std::string out = path("k.autoreg"), ckpt = out + ".ckpt";
  // The killed runs make their own cache, so kills land in preprocessing too.
  const std::string args = base + " --out " + out + " --cache " + path("k.cache");
  int killed = 0, finished = 0;
  const int kills = kills_for(1);
  std::string history;  // what each run did, for the failure message
  for (int k = 0; killed < kills || !fs::exists(out); ++k) {
    ASSERT_LT(k, 3 * kills + 20) << "the killed runs never finished";
    const bool resume = fs::exists(ckpt);
    const double at = killed < kills ? moment(rng) : 600;
    const Outcome o = run_and_kill(args + (resume ? " --resume" : ""), at);
    killed += o.killed;
    const std::string when = "after a kill at " + std::to_string(at) + " s (run " + std::to_string(k) + ")";
    history += "\n  run " + std::to_string(k) + (resume ? " (resumed)" : "") +
               (o.killed ? ": killed at " + std::to_string(o.seconds) + " s" : ": ended by itself");
    if (!o.killed) EXPECT_EQ(o.code, 0) << when;
    expect_whole(ckpt, [](const std::string& p) { registration::read_archive(p, "CHECKPOINT"); }, when);
    expect_whole(out, [](const std::string& p) { registration::load_model(p); }, when);
    expect_inputs_unchanged(when);
    if (fs::exists(out)) {  // finished: the same weights as the run that was never killed
      ++finished;
      const bool same = same_weights(ref, out);
      EXPECT_TRUE(same) << "resumed run differs from the uninterrupted one, " << when << "; the runs:" << history
                        << "\n" << where_they_part(path("ref"), path("k"));
      if (!same) break;  // its files kept for AUTOREG_KEEP_TEST_FILES
      if (killed < kills) {
        for (const auto& p : {out, ckpt, out + ".log.jsonl"}) fs::remove(p);
      }
    }
  }
  std::printf("train: %d runs killed, %d finished runs compared (uninterrupted run %.2f s), %d outputs found whole, "
              "%d temporaries left; the last finished run against the uninterrupted one: %s\n", killed, finished, full,
              outputs_seen_, leftovers(), where_they_part(path("ref"), path("k")).c_str());
  EXPECT_EQ(killed, kills);
  EXPECT_GT(finished, 0);
}

TEST_F(Kill, SearchResumedAfterEveryKillEndsAsAnUninterruptedRun) {
  // The operation costs are measured once (by the uninterrupted run) and given to the
  // killed runs: measured times differ run to run, and the search depends on them.
  {  // two labelled validation subjects: the search chooses α and λ on pairs of them
    std::ofstream csv(path("search.csv"));
    csv << "image,labels,split\n";
    for (int sub = 0; sub < 4; ++sub) {
      csv << "s" << sub << ".nii.gz,s" << sub << "_seg.nii.gz," << (sub < 2 ? "train" : "val") << "\n";
    }
  }
  const std::string base = "search --manifest " + path("search.csv") +
                           " --grid 16x16x16 --spacing 1.5 --threads 2 --warmup 0.34 --arch-every 1 --objective-every 2"
                           " --steps 6 --retrain-steps 4 --validate-every 3 --checkpoint-every 1";
  const auto start = Clock::now();
  const Result r = run(base + " --out " + path("ref"));
  ASSERT_EQ(r.code, 0) << r.output;
  const double full = std::chrono::duration<double>(Clock::now() - start).count();
  fs::copy_file(path("ref/op_cost.json"), path("costs.json"));
  inputs_ = snapshot();
  const registration::Model ref = registration::load_model(path("ref/model.autoreg"));
  const std::string ref_genotype = file_bytes(path("ref/genotype.txt"));
  const std::string out = path("k");
  const std::string args = base + " --op-cost " + path("costs.json") + " --out " + out;
  const auto json_file = [](const std::string& p) {
    std::ifstream f(p);
    const nlohmann::json j = nlohmann::json::parse(f);  // throws on a partial file
    (void)j;
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> moment(0, full);
  int killed = 0, finished = 0;
  const int kills = kills_for(2);
  for (int k = 0; killed < kills || !fs::exists(out + "/model.autoreg"); ++k) {
    ASSERT_LT(k, 3 * kills + 20) << "the killed runs never finished";
    // A run killed before its first checkpoint starts again; after it, it resumes.
    const bool resume = fs::exists(out + "/search.ckpt");
    const double at = killed < kills ? moment(rng) : 600;
    const Outcome o = run_and_kill(args + (resume ? " --resume" : ""), at);
    killed += o.killed;
    const std::string when = "after a kill at " + std::to_string(at) + " s (run " + std::to_string(k) + ")";
    if (!o.killed) EXPECT_EQ(o.code, 0) << when;
    expect_whole(out + "/search.ckpt", [](const std::string& p) { registration::read_archive(p, "SEARCH"); }, when);
    expect_whole(out + "/retrain.ckpt", [](const std::string& p) { registration::read_archive(p, "CHECKPOINT"); }, when);
    expect_whole(out + "/model.autoreg", [](const std::string& p) { registration::load_model(p); }, when);
    expect_whole(out + "/genotype.txt", [](const std::string& p) { registration::read_genotype(p); }, when);
    expect_whole(out + "/genotype.json", json_file, when);
    expect_whole(out + "/op_cost.json", json_file, when);
    expect_whole(out + "/report.html", [](const std::string& p) {
      const std::string html = file_bytes(p);
      if (html.find("</html>") == std::string::npos) throw std::runtime_error(p + ": cut short");
    }, when);
    expect_inputs_unchanged(when);
    if (fs::exists(out + "/model.autoreg")) {  // finished: what the uninterrupted run found and trained
      ++finished;
      EXPECT_EQ(file_bytes(out + "/genotype.txt"), ref_genotype) << when;
      EXPECT_TRUE(same_weights(ref, out + "/model.autoreg")) << "resumed search differs from the uninterrupted one, " << when;
      if (killed < kills) fs::remove_all(out);
    }
  }
  std::printf("search: %d runs killed, %d finished runs compared (uninterrupted run %.2f s), %d outputs found whole, "
              "%d temporaries left\n", killed, finished, full, outputs_seen_, leftovers());
  EXPECT_EQ(killed, kills);
  EXPECT_GT(finished, 0);
}

}  // namespace
}  // namespace autoreg::test
