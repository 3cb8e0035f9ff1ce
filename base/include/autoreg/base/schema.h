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
#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>
#include <functional>
#include <optional>
#include <type_traits>
#include <string>
#include <vector>

#include "autoreg/base/errors.h"
#include "autoreg/base/names.h"
#include "autoreg/base/number_text.h"

namespace autoreg::base {

// What a setting's text stands for, for typed records (the --json settings record).
enum class SettingKind { Text, Number, Whole, Boolean, Numbers };

template <typename S>
struct SettingField {
  std::string keyword;     // the field's name: Python's keyword, the ITK filter's SetSetting name, the --json record's key
  std::string option;      // the command line's --option, without the dashes
  std::string value_name;  // the help's placeholder ("N", "FILE"); "" for a switch
  std::string help;        // what it does; the default is added from the struct's
  std::function<std::string(const S&)> get;             // the value as text ("" unset; booleans "true"/"false")
  std::function<void(S&, const std::string& text)> set;  // an error naming --option for text it does not read
  bool required = false;   // the command line must give it
  bool written_back = true;  // `arguments` writes it (false: the supervisor's own, as --nproc)
  std::string switch_sets;   // a switch: the value its presence gives, in the keyword's terms
                             // (--no-augment: augment "false"); "": the option takes a value
  std::string sample;        // a valid value other than the default (the tests walk the rows with it)
  SettingKind kind = SettingKind::Text;
  bool command_option = false;  // the command declares the option itself (register's --device), not from the row
  std::vector<std::string> aliases;  // older spellings of the option, still read (--lr for --learning-rate)
  bool switch_option() const { return !switch_sets.empty(); }
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
      if (value == f.switch_sets) words.push_back("--" + f.option);
    } else if (!value.empty()) {
      words.insert(words.end(), {"--" + f.option, value});
    }
  }
  return words;
}

// `row` that also reads its option's older spellings (without dashes): a value row's
// option is its keyword (learning_rate: --learning-rate), and where the command line
// spelt it otherwise (--lr) that spelling stays an alias.
template <typename S>
SettingField<S> with_aliases(SettingField<S> row, std::vector<std::string> aliases) {
  row.aliases = std::move(aliases);
  return row;
}

// The row of `keyword` in `schema`, or nullptr.
template <typename S>
const SettingField<S>* find_row(const Schema<S>& schema, const std::string& keyword) {
  for (const SettingField<S>& f : schema) {
    if (f.keyword == keyword) return &f;
  }
  return nullptr;
}

// The schema's keywords, ", "-joined (what a message about an unknown keyword lists).
template <typename S>
std::string keywords_text(const Schema<S>& schema) {
  std::string known;
  for (const SettingField<S>& f : schema) known += (known.empty() ? "" : ", ") + f.keyword;
  return known;
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

// [least, most] within T's own range (an int is not given 2^32 + 1 to read as 1).
template <typename T>
std::pair<int64_t, int64_t> within_type(int64_t least, int64_t most) {
  const int64_t low = std::is_signed_v<T> ? int64_t(std::numeric_limits<T>::min()) : 0;
  const int64_t high = (std::is_signed_v<T> || sizeof(T) < sizeof(int64_t)) ? int64_t(std::numeric_limits<T>::max())
                                                                            : std::numeric_limits<int64_t>::max();
  return {std::max(least, low), std::min(most, high)};
}

template <typename S, typename T>
SettingField<S> whole_field(std::string keyword, std::string option, std::string value_name, std::string help,
                            T S::*member, int64_t least = -kUnbounded, int64_t most = kUnbounded) {
  const std::string o = option;
  std::tie(least, most) = within_type<T>(least, most);
  SettingField<S> f{std::move(keyword), std::move(option), std::move(value_name), std::move(help),
                    [member](const S& s) { return std::to_string(s.*member); },
                    [member, o, least, most](S& s, const std::string& t) { s.*member = T(whole_number(o, t, least, most)); }};
  f.kind = SettingKind::Whole;
  return f;
}

// A finite number, written so that it reads back exactly.
template <typename S, typename T>
SettingField<S> number_field(std::string keyword, std::string option, std::string value_name, std::string help,
                             T S::*member) {
  const std::string o = option;
  SettingField<S> f{std::move(keyword), std::move(option), std::move(value_name), std::move(help),
                    [member](const S& s) { return exact_text(double(s.*member)); },
                    [member, o](S& s, const std::string& t) { s.*member = T(real_number(o, t)); }};
  f.kind = SettingKind::Number;
  return f;
}

// "true" or "false" (also 1 or 0); "--option must be true or false, got 'x'".
inline bool boolean_value(const std::string& option, const std::string& text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw UsageError("--" + option + " must be true or false, got '" + text + "'");
}

// A boolean setting given by a switch whose presence sets it to `on_given`: switch_field
// (--resume: resume true) and off_switch_field (--no-augment: augment false). The
// keyword's value is the setting's own ("augment": "false"), as Python gives it.
template <typename S>
SettingField<S> boolean_switch(std::string keyword, std::string option, std::string help, bool S::*member, bool on_given) {
  const std::string o = option;
  SettingField<S> f{std::move(keyword), std::move(option), "", std::move(help),
                    [member](const S& s) { return std::string(s.*member ? "true" : "false"); },
                    [member, o](S& s, const std::string& t) { s.*member = boolean_value(o, t); }};
  f.switch_sets = on_given ? "true" : "false";
  f.sample = f.switch_sets;
  f.kind = SettingKind::Boolean;
  return f;
}

// A switch that turns a setting off (--no-augment: augment = false).
template <typename S>
SettingField<S> off_switch_field(std::string keyword, std::string option, std::string help, bool S::*member) {
  return boolean_switch(std::move(keyword), std::move(option), std::move(help), member, false);
}

// A switch: on when given.
template <typename S>
SettingField<S> switch_field(std::string keyword, std::string option, std::string help, bool S::*member) {
  return boolean_switch(std::move(keyword), std::move(option), std::move(help), member, true);
}

// `text` when it is one of `table`'s names; "--option must be 'a' or 'b', got 'x'" otherwise.
template <typename E, std::size_t N>
void check_choice(const std::string& option, const NameTable<E, N>& table, const std::string& text) {
  if (!table.contains(text)) throw UsageError("--" + option + " must be " + table.allowed() + ", got '" + text + "'");
}

// One of a choice's names (base/names.h), parsed and written by its one table (copied
// into the row: a table is a small literal).
template <typename S, typename E, std::size_t N>
SettingField<S> choice_field(std::string keyword, std::string option, std::string help, const NameTable<E, N>& table,
                             E S::*member) {
  const std::string o = option;
  return {std::move(keyword), std::move(option), table.joined(), std::move(help),
          [member, table](const S& s) { return std::string(table.name(s.*member)); },
          [member, table, o](S& s, const std::string& t) {
            check_choice(o, table, t);
            s.*member = table.parse(t);
          }};
}

// --device: "cpu" or "cuda" (kDeviceNames), kept as its name.
template <typename S>
SettingField<S> device_field(std::string help, std::string S::*member) {
  return {"device", "device", kDeviceNames.joined(), std::move(help), [member](const S& s) { return s.*member; },
          [member](S& s, const std::string& t) {
            check_choice("device", kDeviceNames, t);
            s.*member = t;
          }};
}

// A setting that may be unset (std::optional<T>: written only when set), a whole number
// of at least `least` or a real number.
template <typename S, typename T>
SettingField<S> optional_field(std::string keyword, std::string option, std::string value_name, std::string help,
                               std::optional<T> S::*member, int64_t least = -kUnbounded) {
  const std::string o = option;
  SettingField<S> f{std::move(keyword), std::move(option), std::move(value_name), std::move(help),
                    [member](const S& s) {
                      if (!(s.*member)) return std::string();
                      if constexpr (std::is_integral_v<T>) return std::to_string(*(s.*member));
                      else return exact_text(double(*(s.*member)));
                    },
                    [member, o, least](S& s, const std::string& t) {
                      if constexpr (std::is_integral_v<T>) {
                        const auto [low, high] = within_type<T>(least, kUnbounded);
                        s.*member = T(whole_number(o, t, low, high));
                      }
                      else {
                        s.*member = T(real_number(o, t));
                      }
                    }};
  f.kind = std::is_integral_v<T> ? SettingKind::Whole : SettingKind::Number;
  return f;
}

// A row of a nested settings struct (`member` of S), e.g. the search's own options.
template <typename S, typename Inner>
SettingField<S> nested_row(const SettingField<Inner>& f, Inner S::*member) {
  SettingField<S> out{f.keyword, f.option, f.value_name, f.help, [g = f.get, member](const S& s) { return g(s.*member); },
                      [st = f.set, member](S& s, const std::string& t) { st(s.*member, t); }, f.required, f.written_back};
  out.switch_sets = f.switch_sets;
  out.sample = f.sample;
  out.kind = f.kind;
  out.command_option = f.command_option;
  out.aliases = f.aliases;
  return out;
}

// The rows of a nested settings struct (`member` of S), e.g. the options several jobs share.
template <typename S, typename Inner>
Schema<S> nested(const Schema<Inner>& inner, Inner S::*member) {
  Schema<S> out;
  for (const SettingField<Inner>& f : inner) out.push_back(nested_row(f, member));
  return out;
}

}  // namespace autoreg::base
