// A job's options made from its settings schema (base/schema.h): each row's option with
// its help, its default (from the struct's defaults) and its placeholder, read back
// through the row. The job's subcommand declares no option of its own for them.
#pragma once

#include <tclap/CmdLine.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
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

// The options of a schema's rows (but those the command declares itself,
// SettingField::command_option), each read back through its row.
template <typename S>
class SchemaArgs {
 public:
  // `unset`: what the help says is the default of a row the defaults leave empty ("":
  // nothing; the registration's options say "none").
  SchemaArgs(TCLAP::CmdLine& cmd, base::Schema<S> schema, const S& defaults, const std::string& unset = "")
      : schema_(std::move(schema)) {
    for (const base::SettingField<S>& f : schema_) {
      if (f.command_option) continue;
      const std::string value = f.switch_option() || f.required ? "" : f.get(defaults);
      options_.push_back({&f, std::make_unique<RowOption>(cmd, f, value.empty() && !f.switch_option() ? unset : value)});
    }
  }

  // Whether the option `option` (without dashes; or an older spelling of it) was given.
  bool given(const std::string& option) const {
    for (const Option& o : options_) {
      if (o.arg->option() == option) return o.arg->given();
    }
    throw std::logic_error("no option --" + option + " among this command's rows");
  }

  // The first of `options` given ("" for none).
  std::string first_given(std::initializer_list<const char*> options) const {
    for (const char* o : options) {
      if (given(o)) return o;
    }
    return "";
  }

  // `s` with every option given on the command line set through its row, in the rows' order.
  S settings(S s) const {
    for (const Option& o : options_) {
      if (was_given(o)) o.row->set(s, o.arg->value());
    }
    return s;
  }

  // The texts given, by keyword (a switch: the value its presence gives).
  std::map<std::string, std::string> given_texts() const {
    std::map<std::string, std::string> texts;
    for (const Option& o : options_) {
      if (was_given(o)) texts[o.row->keyword] = o.arg->value();
    }
    return texts;
  }

  // Every argument these rows declared, the older spellings too.
  std::vector<const TCLAP::Arg*> args() const {
    std::vector<const TCLAP::Arg*> out;
    for (const Option& o : options_) {
      for (const TCLAP::Arg* a : o.arg->args()) out.push_back(a);
    }
    return out;
  }

 private:
  struct Option {
    const base::SettingField<S>* row;
    std::unique_ptr<RowOption> arg;
  };

  // Whether `o` was given; a required row with older spellings is checked here, since
  // TCLAP can require neither spelling.
  static bool was_given(const Option& o) {
    if (!o.arg->given() && o.row->required) throw base::UsageError("--" + o.row->option + " is required");
    return o.arg->given();
  }

  base::Schema<S> schema_;
  std::vector<Option> options_;
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
