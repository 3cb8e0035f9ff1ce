// The options that say how a pair is registered (pipeline::RegistrationSettings), made
// from the settings table (pipeline::setting_rows()) for `register`, `segment` and
// `template`: each row's option with its help and the default it has, read back through
// the row. --device and --affine-only are the commands' own options.
#pragma once

#include <tclap/CmdLine.h>

#include <map>
#include <string>
#include <vector>

#include "autoreg/pair/registration_settings.h"
#include "schema_args.h"

namespace autoreg::apps {

class RegistrationArgs {
 public:
  explicit RegistrationArgs(TCLAP::CmdLine& cmd)
      : args_(cmd, pipeline::setting_rows(), pipeline::RegistrationSettings(), "none") {}

  // Options of this group given on the command line (to refuse them where nothing is registered).
  std::vector<const TCLAP::Arg*> all() const { return args_.args(); }

  // The settings the options given on the command line give (pipeline::settings_given:
  // the preset's, each option given over it; validate() checks the rest when the options
  // are built).
  pipeline::RegistrationSettings settings(const std::string& device) const {
    std::map<std::string, std::string> given = args_.given_texts();
    given["device"] = device;  // --device is the command's own option (its row's command_option)
    return pipeline::settings_given(given);
  }

 private:
  SchemaArgs<pipeline::RegistrationSettings> args_;
};

}  // namespace autoreg::apps
