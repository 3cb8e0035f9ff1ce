// A job's options made from its settings schema (base/schema.h): each row's option with
// its help, its default (from the struct's defaults) and its placeholder, read back
// through the row. The job's subcommand declares no option of its own for them.
#pragma once

#include <tclap/CmdLine.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "autoreg/base/schema.h"

namespace autoreg::apps {

// An older spelling of an option (SettingField::aliases): read as the option is, left
// out of the help, which names it under the option.
class AliasValue : public TCLAP::ValueArg<std::string> {
 public:
  using TCLAP::ValueArg<std::string>::ValueArg;
};
class AliasSwitch : public TCLAP::SwitchArg {
 public:
  using TCLAP::SwitchArg::SwitchArg;
};
inline bool is_alias(const TCLAP::Arg& a) {
  return dynamic_cast<const AliasValue*>(&a) || dynamic_cast<const AliasSwitch*>(&a);
}

// A row's arguments: its option, then one per older spelling.
class RowOption {
 public:
  // `default_text`: what the help says the default is ("" leaves it out).
  template <typename S>
  RowOption(TCLAP::CmdLine& cmd, const base::SettingField<S>& f, const std::string& default_text)
      : option_(f.option), switch_sets_(f.switch_sets) {
    std::string help = f.help + (default_text.empty() ? "" : " (default " + default_text + ")");
    for (const std::string& old : f.aliases) help += " (--" + old + ", its older spelling, is read too)";
    add(cmd, f.option, help, f.required && f.aliases.empty(), f.value_name, false);
    for (const std::string& old : f.aliases) add(cmd, old, "", false, f.value_name, true);
  }

  bool given() const {
    return std::any_of(args_.begin(), args_.end(), [](const auto& a) { return a->isSet(); });
  }

  // The text given (a switch: the value its presence gives), under one spelling; call
  // only when given().
  std::string value() const {
    const TCLAP::Arg* set = nullptr;
    for (const auto& a : args_) {
      if (!a->isSet()) continue;
      if (set) throw base::UsageError("give --" + option_ + " once: --" + set->getName() + " and --" + a->getName() + " are the same option");
      set = a.get();
    }
    return switch_sets_.empty() ? static_cast<const TCLAP::ValueArg<std::string>&>(*set).getValue() : switch_sets_;
  }

  const std::string& option() const { return option_; }
  std::vector<const TCLAP::Arg*> args() const {
    std::vector<const TCLAP::Arg*> out;
    for (const auto& a : args_) out.push_back(a.get());
    return out;
  }

 private:
  void add(TCLAP::CmdLine& cmd, const std::string& name, const std::string& help, bool required,
           const std::string& value_name, bool alias) {
    std::unique_ptr<TCLAP::Arg> arg;
    if (!switch_sets_.empty()) {
      arg = alias ? std::make_unique<AliasSwitch>("", name, help, false) : std::make_unique<TCLAP::SwitchArg>("", name, help, false);
    } else if (alias) {
      arg = std::make_unique<AliasValue>("", name, help, false, "", value_name);
    } else {
      arg = std::make_unique<TCLAP::ValueArg<std::string>>("", name, help, required, "", value_name);
    }
    cmd.add(*arg);
    args_.push_back(std::move(arg));
  }

  std::string option_, switch_sets_;
  std::vector<std::unique_ptr<TCLAP::Arg>> args_;
};

template <typename S>
class SchemaArgs {
 public:
  SchemaArgs(TCLAP::CmdLine& cmd, base::Schema<S> schema, const S& defaults) : schema_(std::move(schema)) {
    for (const base::SettingField<S>& f : schema_) {
      const std::string value = f.switch_option() || f.required ? "" : f.get(defaults);
      options_.push_back(std::make_unique<RowOption>(cmd, f, value));
    }
  }

  // Whether the option `option` (without dashes; or an older spelling of it) was given.
  bool given(const std::string& option) const {
    for (const auto& o : options_) {
      if (o->option() == option) return o->given();
    }
    return false;
  }

  // `s` with every option given on the command line set through its row.
  S settings(S s) const {
    for (size_t i = 0; i < schema_.size(); ++i) {
      if (options_[i]->given()) schema_[i].set(s, options_[i]->value());
    }
    return s;
  }

 private:
  base::Schema<S> schema_;
  std::vector<std::unique_ptr<RowOption>> options_;
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
