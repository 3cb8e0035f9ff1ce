// A job's settings schema: one row per setting of a settings struct S, from which the
// front ends are made: the command line's options (apps/schema_args.h: the option, its
// help with the default, its placeholder), the command line that gives the settings back
// (`arguments`: what a supervisor's ranks run) and the settings read from option text
// (`set`). A new setting of a job is a field, a row and its algorithm.
//
// Values travel as the command line's text ("200", "1e-3", "true"); a row's `set` throws
// base::UsageError naming its option for text it does not read.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "autoreg/base/errors.h"

namespace autoreg::base {

template <typename S>
struct SettingField {
  std::string keyword;     // the field's name: Python's keyword, the --json record's key
  std::string option;      // the command line's --option, without the dashes
  std::string value_name;  // the help's placeholder ("N", "FILE"); "" for a switch
  std::string help;        // what it does; the default is added from the struct's
  std::function<std::string(const S&)> get;             // the value as text ("" unset; a switch "true"/"false")
  std::function<void(S&, const std::string& text)> set;  // UsageError naming --option for bad text
  bool required = false;   // the command line must give it
  bool written_back = true;  // `arguments` writes it (false: the supervisor's own, as --nproc)
  bool switch_option() const { return value_name.empty(); }
};
template <typename S>
using Schema = std::vector<SettingField<S>>;

// The command line that gives `s` back: `command`, then every setting with a value (a
// switch when it is on), in the schema's order.
template <typename S>
std::vector<std::string> arguments(const std::string& command, const Schema<S>& schema, const S& s) {
  std::vector<std::string> words{command};
  for (const SettingField<S>& f : schema) {
    if (!f.written_back) continue;
    const std::string value = f.get(s);
    if (f.switch_option()) {
      if (value == "true") words.push_back("--" + f.option);
    } else if (!value.empty()) {
      words.insert(words.end(), {"--" + f.option, value});
    }
  }
  return words;
}

// ---- rows for the common kinds of field -------------------------------------------

// Text as given.
template <typename S>
SettingField<S> text_field(std::string keyword, std::string option, std::string value_name, std::string help,
                           std::string S::*member, bool required = false) {
  return {std::move(keyword), std::move(option), std::move(value_name), std::move(help),
          [member](const S& s) { return s.*member; }, [member](S& s, const std::string& t) { s.*member = t; }, required};
}

// Bounds at or beyond ±2^53 count as none (the messages leave them out).
inline constexpr int64_t kUnbounded = int64_t(1) << 53;

// A whole number in [least, most]; "--option must be a whole number from L to M, got 'x'"
// (or "of at least L", or no range, where a bound is kUnbounded).
inline int64_t whole_number(const std::string& option, const std::string& text, int64_t least = -kUnbounded,
                            int64_t most = kUnbounded) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < least || value > most) {
    const bool low = least > -kUnbounded, high = most < kUnbounded;
    const std::string range = low && high ? " from " + std::to_string(least) + " to " + std::to_string(most)
                              : low       ? " of at least " + std::to_string(least)
                              : high      ? " of at most " + std::to_string(most)
                                          : "";
    throw UsageError("--" + option + " must be a whole number" + range + ", got '" + text + "'");
  }
  return value;
}

// A finite number; "--option must be a number, got 'x'".
inline double real_number(const std::string& option, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value - value == 0)) {
    throw UsageError("--" + option + " must be a number, got '" + text + "'");
  }
  return value;
}

// A number as options write it, so that it reads back exactly ("0.5", "1e-05").
inline std::string exact_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

template <typename S, typename T>
SettingField<S> whole_field(std::string keyword, std::string option, std::string value_name, std::string help,
                            T S::*member, int64_t least = -kUnbounded, int64_t most = kUnbounded) {
  const std::string o = option;
  return {std::move(keyword), std::move(option), std::move(value_name), std::move(help),
          [member](const S& s) { return std::to_string(s.*member); },
          [member, o, least, most](S& s, const std::string& t) { s.*member = T(whole_number(o, t, least, most)); }};
}

// A finite number, written so that it reads back exactly.
template <typename S, typename T>
SettingField<S> number_field(std::string keyword, std::string option, std::string value_name, std::string help,
                             T S::*member) {
  const std::string o = option;
  return {std::move(keyword), std::move(option), std::move(value_name), std::move(help),
          [member](const S& s) { return exact_text(double(s.*member)); },
          [member, o](S& s, const std::string& t) { s.*member = T(real_number(o, t)); }};
}

// A switch that turns a setting off (--no-augment: augment = false).
template <typename S>
SettingField<S> off_switch_field(std::string keyword, std::string option, std::string help, bool S::*member) {
  return {std::move(keyword), std::move(option), "", std::move(help),
          [member](const S& s) { return std::string(s.*member ? "false" : "true"); },
          [member](S& s, const std::string& t) { s.*member = t != "true"; }};
}

// A switch: on when given.
template <typename S>
SettingField<S> switch_field(std::string keyword, std::string option, std::string help, bool S::*member) {
  return {std::move(keyword), std::move(option), "", std::move(help),
          [member](const S& s) { return std::string(s.*member ? "true" : "false"); },
          [member](S& s, const std::string& t) { s.*member = t == "true"; }};
}

// The rows of a nested settings struct (`member` of S), e.g. the options several jobs share.
template <typename S, typename Inner>
Schema<S> nested(const Schema<Inner>& inner, Inner S::*member) {
  Schema<S> out;
  for (const SettingField<Inner>& f : inner) {
    out.push_back({f.keyword, f.option, f.value_name, f.help,
                   [g = f.get, member](const S& s) { return g(s.*member); },
                   [st = f.set, member](S& s, const std::string& t) { st(s.*member, t); }, f.required, f.written_back});
  }
  return out;
}

}  // namespace autoreg::base
