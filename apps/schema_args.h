// A job's options made from its settings schema (base/schema.h): each row's option with
// its help, its default (from the struct's defaults) and its placeholder, read back
// through the row. The job's subcommand declares no option of its own for them.
#pragma once

#include <tclap/CmdLine.h>

#include <memory>
#include <string>
#include <vector>

#include "autoreg/base/schema.h"

namespace autoreg::apps {

template <typename S>
class SchemaArgs {
 public:
  SchemaArgs(TCLAP::CmdLine& cmd, base::Schema<S> schema, const S& defaults) : schema_(std::move(schema)) {
    for (const base::SettingField<S>& f : schema_) {
      std::unique_ptr<TCLAP::Arg> arg;
      if (f.switch_option()) {
        arg = std::make_unique<TCLAP::SwitchArg>("", f.option, f.help, false);
      } else {
        const std::string value = f.get(defaults);
        const std::string help = f.help + (value.empty() || f.required ? "" : " (default " + value + ")");
        arg = std::make_unique<TCLAP::ValueArg<std::string>>("", f.option, help, f.required, value, f.value_name);
      }
      cmd.add(*arg);
      args_.push_back(std::move(arg));
    }
  }

  // Whether the option `option` (without dashes) was given.
  bool given(const std::string& option) const {
    for (size_t i = 0; i < schema_.size(); ++i) {
      if (schema_[i].option == option) return args_[i]->isSet();
    }
    return false;
  }

  // `s` with every option given on the command line set through its row.
  S settings(S s) const {
    for (size_t i = 0; i < schema_.size(); ++i) {
      if (!args_[i]->isSet()) continue;
      schema_[i].set(s, schema_[i].switch_option() ? schema_[i].switch_sets
                                                   : static_cast<const TCLAP::ValueArg<std::string>&>(*args_[i]).getValue());
    }
    return s;
  }

 private:
  base::Schema<S> schema_;
  std::vector<std::unique_ptr<TCLAP::Arg>> args_;
};

// What only a command line can say wrongly about running on many processes (the
// scale-out rows of train, search and template): --max-restarts without --nproc.
template <typename S>
void check_scale_out(const SchemaArgs<S>& given) {
  if (given.given("max-restarts") && !given.given("nproc")) {
    throw base::UsageError("--max-restarts needs --nproc (under torchrun: --max-restarts of torchrun)");
  }
}

}  // namespace autoreg::apps
