// The installed package as an ITK developer uses it: `cmake --install` into a fresh
// prefix, examples/itk_pipeline configured and built against it with
// find_package(AutoReg), run on a real pair; its output must equal what the installed
// `autoreg register` writes for the same pair and model.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

TEST(InstalledPackage, ItkPipelineExampleGivesRegistersOutput) {
  const fs::path data = shared_data();
  const fs::path fixed = data / "pairs" / "oasisB_t1.nii.gz", moving = data / "pairs" / "oasisA_t1.nii.gz";
  if (!fs::exists(fixed) || !fs::exists(moving)) GTEST_SKIP() << "no test data at " << data;

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
                          " -B " + shell_quoted(example) + " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" +
                          shell_quoted(moved);
  if (std::string launcher = AUTOREG_CXX_LAUNCHER; !launcher.empty()) {
    configure += " -DCMAKE_CXX_COMPILER_LAUNCHER=" + shell_quoted(launcher);
  }
  ASSERT_TRUE(runs(configure, work / "configure.log"));
  ASSERT_TRUE(runs(cmake + " --build " + shell_quoted(example), work / "build.log"));

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
