// The options that say how a pair is registered (pipeline::RegistrationSettings), made
// from the settings table (pipeline::setting_rows()) for `register`, `segment` and
// `template`: each row's option with its help and the default it has, read back through
// the row. --device and --affine-only are the commands' own options.
#pragma once

#include <tclap/CmdLine.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autoreg/pair/registration_settings.h"
#include "schema_args.h"

namespace autoreg::apps {

struct RegistrationArgs {
  explicit RegistrationArgs(TCLAP::CmdLine& cmd) {
    const pipeline::RegistrationSettings defaults;
    for (const pipeline::SettingRow& row : pipeline::setting_rows()) {
      if (row.command_option) continue;
      const std::string value = row.switch_option() ? "" : row.get(defaults);
      args_.push_back({&row, std::make_unique<RowOption>(cmd, row, row.switch_option() ? "" : value.empty() ? "none" : value)});
    }
  }

  // Options of this group given on the command line (to refuse them where nothing is registered).
  std::vector<const TCLAP::Arg*> all() const {
    std::vector<const TCLAP::Arg*> out;
    for (const auto& a : args_) {
      for (const TCLAP::Arg* arg : a.option->args()) out.push_back(arg);
    }
    return out;
  }

  // The settings the options given on the command line give (pipeline::settings_given:
  // the preset's, each option given over it; validate() checks the rest when the options
  // are built).
  pipeline::RegistrationSettings settings(const std::string& device) const {
    std::map<std::string, std::string> given{{"device", device}};
    for (const auto& a : args_) {
      if (a.option->given()) given[a.row->keyword] = a.option->value();
    }
    return pipeline::settings_given(given);
  }

 private:
  struct Option {
    const pipeline::SettingRow* row;
    std::unique_ptr<RowOption> option;
  };
  std::vector<Option> args_;
};

}  // namespace autoreg::apps
