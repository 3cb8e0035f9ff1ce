// The settings table (pipeline::setting_rows()) walked row by row through the front ends
// made from it: the command line's options (apps/registration_args.h, parsed as
// `autoreg register` parses them), the ITK filter's SetSetting/GetSetting and its typed
// setters' defaults; Python's keywords walk it in python/tests/test_register.py.
#include <gtest/gtest.h>

#include <itkImage.h>
#include <tclap/CmdLine.h>

#include <set>
#include <string>
#include <vector>

#include "../../apps/registration_args.h"
#include "autoreg/pair/registration_settings.h"
#include "itkAutoRegImageRegistrationFilter.h"

namespace autoreg::test {
namespace {

using Filter = itk::AutoRegImageRegistrationFilter<itk::Image<float, 3>>;

// The settings `register <words>` gives, as apps/registration_args.h reads them.
pipeline::RegistrationSettings parsed(const std::vector<std::string>& words) {
  TCLAP::CmdLine cmd("test", ' ', "0");
  cmd.setExceptionHandling(false);
  apps::RegistrationArgs args(cmd);
  std::vector<std::string> argv{"register"};
  argv.insert(argv.end(), words.begin(), words.end());
  cmd.parse(argv);
  return args.settings("cpu");
}

TEST(SettingsTable, EveryRowHasItsDefaultAndItsSampleThroughTheCommandLineAndTheFilter) {
  const pipeline::RegistrationSettings defaults;
  const pipeline::RegistrationSettings from_nothing = parsed({});
  auto filter = Filter::New();
  std::set<std::string> keywords, options;
  for (const pipeline::SettingRow& row : pipeline::setting_rows()) {
    SCOPED_TRACE(row.keyword);
    EXPECT_TRUE(keywords.insert(row.keyword).second) << "a keyword twice";
    EXPECT_TRUE(options.insert(row.option).second) << "an option twice";
    EXPECT_FALSE(row.help.empty());
    // The same default everywhere: the struct's, the command line's with no options, the filter's.
    const std::string fallback = row.get(defaults);
    EXPECT_EQ(row.get(from_nothing), fallback);
    EXPECT_EQ(filter->GetSetting(row.keyword), fallback);
    // The sample differs from the default and reads back as itself.
    pipeline::RegistrationSettings s;
    row.set(s, row.sample);
    const std::string sample = row.get(s);
    EXPECT_NE(sample, fallback);
    // The command line: the option (a switch by its presence) gives the same value.
    if (!row.command_option) {
      const std::vector<std::string> words =
          row.switch_sets.empty() ? std::vector<std::string>{"--" + row.option, row.sample}
                                  : std::vector<std::string>{"--" + row.option};
      if (row.switch_sets.empty() || row.switch_sets == row.sample) {
        EXPECT_EQ(row.get(parsed(words)), sample) << "--" << row.option;
      }
    }
    // The filter, by name.
    auto f = Filter::New();
    f->SetSetting(row.keyword, row.sample);
    EXPECT_EQ(f->GetSetting(row.keyword), row.keyword == "padding" ? row.sample : sample);
  }
  EXPECT_THROW(filter->SetSetting("ncc_window", "3"), itk::ExceptionObject);
  EXPECT_THROW(filter->SetSetting("ncc_window_mm", "three"), itk::ExceptionObject);
  EXPECT_THROW(parsed({"--regularization", "a lot"}), base::UsageError);
}

// The filter's typed setters are its settings by name: a value set one way is read the other.
TEST(SettingsTable, TheFiltersTypedSettersAreItsNamedSettings) {
  auto filter = Filter::New();
  filter->SetNccWindow(9.0);
  filter->SetCompareFiner(2u);
  filter->UseRigidOn();
  EXPECT_EQ(filter->GetSetting("ncc_window_mm"), "9");
  EXPECT_EQ(filter->GetSetting("compare_finer"), "2");
  EXPECT_EQ(filter->GetSetting("rigid"), "true");
  filter->SetSetting("learning_rate", "0.25");
  EXPECT_EQ(filter->GetLearningRate(), 0.25);
  filter->SetSetting("intensity_window", "-1000,1000");
  EXPECT_FALSE(filter->GetUseAutomaticIntensityWindow());
  EXPECT_EQ(filter->GetIntensityWindow()[1], 1000.0);
}

}  // namespace
}  // namespace autoreg::test
