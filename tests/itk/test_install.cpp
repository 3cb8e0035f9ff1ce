// The installed package as an ITK developer uses it: `cmake --install` into a fresh
// prefix, examples/itk_pipeline configured and built against it with
// find_package(AutoReg) as a user's project is (no build type: NDEBUG is not defined, so
// ITK's debug macros are compiled; a Release-only check let a setter that streams a
// std::vector through), every installed header compiled on its own with the example's
// flags (a missing include or operator fails here), then the example run on a real pair:
// its output must equal what the installed `autoreg register` writes for the same pair
// and model.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autoreg/io/volume.h"
#include "shared_data.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;

// Runs a shell command with its output in `log`; the log's end on failure.
::testing::AssertionResult runs(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  if (status == 0) return ::testing::AssertionSuccess();
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::string out = text.str();
  if (out.size() > 4000) out = "..." + out.substr(out.size() - 4000);
  return ::testing::AssertionFailure() << command << "\nexited with " << status << ":\n" << out;
}

std::string shell_quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Compiles every header under `include` on its own (-fsyntax-only) with the flags of the
// example's compile command in `commands` (compile_commands.json), two at a time; the
// headers that failed, with the end of their compiler's output.
std::string headers_that_fail(const fs::path& include, const fs::path& commands, const fs::path& logs) {
  std::ifstream in(commands);
  const nlohmann::json all = nlohmann::json::parse(in);
  std::string command;
  for (const auto& c : all) {
    if (c["file"].get<std::string>().find("itk_pipeline.cpp") != std::string::npos) command = c["command"];
  }
  if (command.empty()) return "no compile command for itk_pipeline.cpp in " + commands.string();
  // "... -o X.o -c FILE" → "... -fsyntax-only -x c++": the flags alone.
  command = command.substr(0, command.find(" -o "));
  std::vector<fs::path> headers;
  for (const auto& e : fs::recursive_directory_iterator(include)) {
    if (e.is_regular_file() && e.path().extension() == ".h") headers.push_back(e.path());
  }
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::string failed;
  const auto work = [&] {
    for (size_t i = next++; i < headers.size(); i = next++) {
      const fs::path log = logs / ("header-" + std::to_string(i) + ".log");
      const ::testing::AssertionResult ok =
          runs(command + " -fsyntax-only -x c++ " + shell_quoted(headers[i]), log);
      if (!ok) {
        std::lock_guard<std::mutex> lock(mutex);
        failed += headers[i].string() + ":\n" + ok.message() + "\n";
      }
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  if (headers.size() < 40) failed += "only " + std::to_string(headers.size()) + " headers under " + include.string();
  return failed;
}

TEST(InstalledPackage, ItkPipelineExampleBuildsAndGivesRegistersOutput) {
  const fs::path data = shared_data();
  const fs::path fixed = data / "pairs" / "oasisB_t1.nii.gz", moving = data / "pairs" / "oasisA_t1.nii.gz";

  // A fixed place in the build tree (so that ccache recognises the example's compile on
  // the next run), emptied first.
  const fs::path work = fs::path(AUTOREG_BUILD_DIR) / "install-test";
  fs::remove_all(work);
  fs::create_directories(work);
  const fs::path prefix = work / "prefix";
  const std::string cmake = shell_quoted(AUTOREG_CMAKE);
  ASSERT_TRUE(runs(cmake + " --install " + shell_quoted(AUTOREG_BUILD_DIR) + " --prefix " + shell_quoted(prefix), work / "install.log"));
  for (const char* f : {"lib/cmake/AutoReg/AutoRegConfig.cmake", "include/itkAutoRegImageRegistrationFilter.h",
                        "bin/autoreg", "share/autoreg/default.autoreg"}) {
    EXPECT_TRUE(fs::exists(prefix / f)) << f;
  }
  // Relocatable: the prefix is moved before it is used.
  const fs::path moved = work / "moved-prefix";
  fs::rename(prefix, moved);

  const fs::path example = work / "example";
  std::string configure = cmake + " -S " + shell_quoted(fs::path(AUTOREG_SOURCE_DIR) / "examples" / "itk_pipeline") +
                          " -B " + shell_quoted(example) +
                          " -G Ninja -DCMAKE_BUILD_TYPE= -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_PREFIX_PATH=" +
                          shell_quoted(moved);
  if (std::string launcher = AUTOREG_CXX_LAUNCHER; !launcher.empty()) {
    configure += " -DCMAKE_CXX_COMPILER_LAUNCHER=" + shell_quoted(launcher);
  }
  ASSERT_TRUE(runs(configure, work / "configure.log"));
  ASSERT_TRUE(runs(cmake + " --build " + shell_quoted(example), work / "build.log"));
  EXPECT_EQ(headers_that_fail(moved / "include", example / "compile_commands.json", work), "");
  if (!fs::exists(fixed) || !fs::exists(moving)) {
    std::cout << "no test data at " << data << ": the example is built, not run" << std::endl;
    fs::remove_all(work);
    return;
  }

  // Both with the default model found in the moved prefix (not via the environment).
  ::unsetenv("AUTOREG_DEFAULT_MODEL");
  const fs::path ours = work / "example.nii.gz", theirs = work / "register.nii.gz";
  ASSERT_TRUE(runs(shell_quoted(example / "itk_pipeline") + " " + shell_quoted(fixed) + " " + shell_quoted(moving) + " " + shell_quoted(ours) +
                       " default",
                   work / "example.log"));
  ASSERT_TRUE(runs(shell_quoted(moved / "bin" / "autoreg") + " register --fixed " + shell_quoted(fixed) + " --moving " +
                       shell_quoted(moving) + " --out-warped " + shell_quoted(theirs) + " --out-field " +
                       shell_quoted(work / "field.nii.gz") + " --model default",
                   work / "register.log"));

  const io::Volume a = io::read_volume(ours.string()), b = io::read_volume(theirs.string());
  ASSERT_EQ(a.data.sizes(), b.data.sizes());
  const double range = (b.data.max() - b.data.min()).item<double>();
  const double diff = (a.data - b.data).abs().max().item<double>();
  std::cout << "largest difference " << diff << " (range " << range << ")" << std::endl;
  ASSERT_GT(range, 0);
  EXPECT_LT(diff, 1e-4 * range);
  if (!HasFailure()) fs::remove_all(work);  // kept for a look when something failed
}

}  // namespace
}  // namespace autoreg::test
