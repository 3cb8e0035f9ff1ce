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

namespace autoreg::apps {

struct RegistrationArgs {
  explicit RegistrationArgs(TCLAP::CmdLine& cmd) {
    const pipeline::RegistrationSettings defaults;
    for (const pipeline::SettingRow& row : pipeline::setting_rows()) {
      if (row.command_option) continue;
      std::unique_ptr<TCLAP::Arg> arg;
      if (!row.switch_sets.empty()) {
        arg = std::make_unique<TCLAP::SwitchArg>("", row.option, row.help, false);
      } else {
        const std::string value = row.get(defaults);
        const std::string help = row.help + " (default " + (value.empty() ? "none" : value) + ")";
        arg = std::make_unique<TCLAP::ValueArg<std::string>>("", row.option, help, false, value, row.value_name);
      }
      cmd.add(*arg);
      args_.push_back({&row, std::move(arg)});
    }
  }

  // Options of this group given on the command line (to refuse them where nothing is registered).
  std::vector<const TCLAP::Arg*> all() const {
    std::vector<const TCLAP::Arg*> out;
    for (const auto& a : args_) out.push_back(a.arg.get());
    return out;
  }

  // The settings the options given on the command line give (pipeline::settings_given:
  // the preset's, each option given over it; validate() checks the rest when the options
  // are built).
  pipeline::RegistrationSettings settings(const std::string& device) const {
    std::map<std::string, std::string> given{{"device", device}};
    for (const auto& a : args_) {
      if (!a.arg->isSet()) continue;
      given[a.row->keyword] = a.row->switch_sets.empty()
                                  ? static_cast<const TCLAP::ValueArg<std::string>&>(*a.arg).getValue()
                                  : a.row->switch_sets;
    }
    return pipeline::settings_given(given);
  }

 private:
  struct Option {
    const pipeline::SettingRow* row;
    std::unique_ptr<TCLAP::Arg> arg;
  };
  std::vector<Option> args_;
};

}  // namespace autoreg::apps
