// The options that say how a pair is registered (pipeline::RegistrationSettings), made
// from the settings table (pipeline::setting_rows()) for `register`, `segment` and
// `template`: each row's option with its help and the default it has, read back through
// the row. --device and --affine-only are the commands' own options.
#pragma once

#include <tclap/CmdLine.h>

#include <memory>
#include <string>
#include <vector>

#include "autoreg/pipeline/registration_settings.h"
#include "exit_codes.h"

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

  // The settings the options give: the preset's, with the options given on the command
  // line instead, in the table's order (UsageError for a value that does not read and for
  // --iterations with --model; validate() checks the rest when the options are built).
  pipeline::RegistrationSettings settings(const std::string& device) const {
    pipeline::RegistrationSettings s = pipeline::preset_settings(text_of("preset"));
    s.device = device;
    for (const auto& a : args_) {
      if (a.row->keyword == "preset" || !a.arg->isSet()) continue;
      a.row->set(s, a.row->switch_sets.empty() ? static_cast<const TCLAP::ValueArg<std::string>&>(*a.arg).getValue()
                                               : a.row->switch_sets);
    }
    if (is_set("iterations") && !s.model.empty()) {
      throw UsageError("--iterations sets instance optimisation, which --model replaces (use --refine K)");
    }
    return s;
  }

 private:
  struct Option {
    const pipeline::SettingRow* row;
    std::unique_ptr<TCLAP::Arg> arg;
  };
  const Option& option(const std::string& keyword) const {
    for (const auto& a : args_) {
      if (a.row->keyword == keyword) return a;
    }
    throw std::logic_error("registration_args.h: no option for " + keyword);
  }
  std::string text_of(const std::string& keyword) const {
    return static_cast<const TCLAP::ValueArg<std::string>&>(*option(keyword).arg).getValue();
  }
  bool is_set(const std::string& keyword) const { return option(keyword).arg->isSet(); }

  std::vector<Option> args_;
};

}  // namespace autoreg::apps
