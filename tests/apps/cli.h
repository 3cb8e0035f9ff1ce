// The `autoreg` command line run as a user runs it: a test fixture with a temporary
// folder and a small oblique volume, label map and field in it.
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <string>
#include <sstream>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <spawn.h>

#include "autoreg/io/field.h"
#include "autoreg/io/volume.h"

extern char** environ;

namespace autoreg::test {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

inline Result run_command(const std::string& cmd) {
  Result r{-1, ""};
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::array<char, 512> buf{};
  while (pipe && std::fgets(buf.data(), buf.size(), pipe)) r.output += buf.data();
  const int status = pipe ? ::pclose(pipe) : -1;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline Result run(const std::string& args) { return run_command(std::string(AUTOREG_BIN) + " " + args + " 2>&1"); }

// Starts autoreg with `args` (split on spaces), its output discarded; its pid, or -1.
inline pid_t spawn_quietly(const std::string& args) {
  std::vector<std::string> words{AUTOREG_BIN};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, AUTOREG_BIN, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The width and height a PNG file's header gives (its IHDR chunk), or {0, 0} when the
// file is not a PNG: enough to check a picture was written whole, without decoding it.
inline std::pair<int, int> png_size(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char h[24] = {};
  in.read(reinterpret_cast<char*>(h), sizeof h);
  const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!in || std::memcmp(h, signature, 8) != 0 || std::memcmp(h + 12, "IHDR", 4) != 0) return {0, 0};
  const auto be32 = [&](int at) { return int(h[at]) << 24 | int(h[at + 1]) << 16 | int(h[at + 2]) << 8 | int(h[at + 3]); };
  return {be32(16), be32(20)};
}

// Runs `autoreg args` and sends it SIGTERM after `seconds` (coreutils' timeout, which
// then reports the command's own exit status).
inline Result run_with_signal(const std::string& args, int seconds) {
  return run_command("timeout --preserve-status -s TERM " + std::to_string(seconds) + " " + std::string(AUTOREG_BIN) +
                     " " + args + " 2>&1");
}

// Subject s of a small synthetic dataset on 20×22×24 voxels (the train, search and kill
// tests'): two nested spheres shifted with s, as an image (with a gradient along the first
// axis when `ramp`) and a label map (1 outside, 2 inside the inner sphere).
inline std::pair<at::Tensor, at::Tensor> sphere_subject(int s, bool ramp) {
  const at::Tensor r = at::linspace(-1, 1, 20).view({20, 1, 1}), q = at::linspace(-1, 1, 22).view({1, 22, 1}),
                   p = at::linspace(-1, 1, 24).view({1, 1, 24});
  const double shift = 0.08 * (s - 2);
  const at::Tensor d2 = (r - shift).pow(2) + q.pow(2) + (p + shift).pow(2);
  at::Tensor image = 0.4 * (d2 < 0.6).to(at::kFloat) + 0.5 * (d2 < 0.2).to(at::kFloat);
  if (ramp) image = image + 0.05 * (r + 1);
  const at::Tensor labels = (d2 < 0.6).to(at::kInt) + (d2 < 0.2).to(at::kInt);
  return {image.view({1, 1, 20, 22, 24}), labels.view({1, 1, 20, 22, 24})};
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-cli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    grid_.size = {12, 10, 8};
    grid_.spacing = {1.2, 0.9, 2.0};
    grid_.origin = {-5, 3, 1};
    grid_.direction = {0, -1, 0, 1, 0, 0, 0, 0, 1};  // rotated 90° about z
    at::manual_seed(7);
    moving_ = at::rand({1, 1, 8, 10, 12});
    const at::Tensor coarse = (at::rand({1, 3, 3, 3, 3}, at::kDouble) * 2 - 1) * 2;
    field_ = at::upsample_trilinear3d(coarse, {8, 10, 12}, true).to(at::kFloat);
    io::write_volume(path("moving.nii.gz"), {moving_, grid_});
    io::write_volume(path("labels.nii.gz"), {(moving_ * 5).floor().to(at::kInt) * 10, grid_});
    io::write_displacement_field(path("field.nii.gz"), field_, grid_);
  }
  // AUTOREG_KEEP_TEST_FILES=1 keeps a failed test's folder to look into; =all keeps every test's.
  void TearDown() override {
    const char* keep = std::getenv("AUTOREG_KEEP_TEST_FILES");
    if (keep && *keep && (::testing::Test::HasFailure() || std::string(keep) == "all")) {
      std::printf("kept %s\n", dir_.c_str());
      return;
    }
    fs::remove_all(dir_);
  }
  // sN.nii.gz and sN_seg.nii.gz for N < n: sphere_subject(N) on `g` (24×22×20 voxels of
  // 1.0×1.1×1.2 mm by default).
  void write_sphere_subjects(int n, io::Geometry g = {}) const {
    if (g.size[0] == 0) {
      g.size = {24, 22, 20};
      g.spacing = {1.0, 1.1, 1.2};
    }
    for (int s = 0; s < n; ++s) {
      const auto [image, labels] = sphere_subject(s, /*ramp=*/true);
      io::write_volume(path("s" + std::to_string(s) + ".nii.gz"), {image, g});
      io::write_volume(path("s" + std::to_string(s) + "_seg.nii.gz"), {labels, g});
    }
  }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
  io::Geometry grid_;
  at::Tensor moving_, field_;
};

}  // namespace autoreg::test
