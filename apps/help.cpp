#include "help.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "autoreg/pair/registration_settings.h"
#include "schema_args.h"

namespace autoreg::apps {
namespace {

constexpr size_t kWidth = 80;      // columns of the help
constexpr size_t kOptionCol = 2;   // where an option starts
constexpr size_t kHelpCol = 8;     // where its help starts (on the lines under it)

const char* const kGroups[] = {"Inputs", "Outputs", "Presets and models", "Settings", "Running"};

// `text` wrapped to kWidth columns, each line indented by `indent` spaces.
std::string wrapped(const std::string& text, size_t indent) {
  std::string out, line;
  size_t at = 0;
  while (at < text.size()) {
    const size_t space = text.find(' ', at);
    const std::string word = text.substr(at, space == std::string::npos ? std::string::npos : space - at);
    at = space == std::string::npos ? text.size() : space + 1;
    if (word.empty()) continue;
    if (!line.empty() && indent + line.size() + 1 + word.size() > kWidth) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

// "--fixed <FILE>" (TCLAP's short form without its brackets).
std::string option_form(TCLAP::Arg& a) {
  std::string form = a.shortID();
  if (form.size() >= 2 && form.front() == '[' && form.back() == ']') form = form.substr(1, form.size() - 2);
  return form;
}

// The presets as a table under --preset.
std::string preset_table() {
  size_t name_width = 0;
  for (const pipeline::Preset& p : pipeline::presets()) name_width = std::max(name_width, p.name.size());
  std::string out = wrapped("named settings for an anatomy and motion, which the options given override (default " +
                                pipeline::RegistrationSettings().preset + "):", kHelpCol);
  const size_t indent = kHelpCol + 2 + name_width + 2;
  for (const pipeline::Preset& p : pipeline::presets()) {
    std::string rows = wrapped(p.purpose, indent);
    const std::string head = std::string(kHelpCol + 2, ' ') + p.name + std::string(name_width - p.name.size() + 2, ' ');
    out += head + rows.substr(indent);
  }
  return out;
}

}  // namespace

std::string help_group(const std::string& o) {
  static const std::set<std::string> inputs = {"fixed", "moving", "field", "reference", "points", "points-grid",
                                              "points-index-base", "target", "atlases", "images", "manifest",
                                              "registered", "run", "pairs", "warped-labels", "labels"};
  static const std::set<std::string> outputs = {"qc", "json", "csv", "log", "inverse"};
  static const std::set<std::string> presets = {"preset", "model", "genotype", "unet", "affine-only", "no-affine",
                                               "rigid", "refine"};
  static const std::set<std::string> running = {
      "threads", "device", "seed", "resume", "shard", "merge", "allow-missing", "nproc", "max-restarts",
      "collective-timeout", "sync-checkpoints", "cache", "checkpoint-every", "validate-every", "validation-threads",
      "force", "strict", "max-unreadable", "fixed-orientation", "moving-orientation"};
  const auto ends_with = [&](const std::string& s) { return o.size() > s.size() && o.compare(o.size() - s.size(), s.size(), s) == 0; };
  if (o.rfind("out", 0) == 0 || outputs.count(o)) return "Outputs";
  if (inputs.count(o) || ends_with("-labels") || ends_with("-points") || ends_with("-mask") || ends_with("-contours")) {
    return "Inputs";
  }
  if (presets.count(o)) return "Presets and models";
  if (running.count(o)) return "Running";
  return "Settings";
}

std::string GroupedHelp::text(TCLAP::CmdLineInterface& cmd) const {
  // TCLAP lists the options last declared first: read them in the order they were declared.
  std::vector<TCLAP::Arg*> args(cmd.getArgList().rbegin(), cmd.getArgList().rend());
  std::string out = wrapped("autoreg " + subcommand_ + ": " + cmd.getMessage(), 0);
  out += "\nUsage: autoreg " + subcommand_;
  for (TCLAP::Arg* a : args) {
    if (a->isRequired()) out += " " + option_form(*a);
  }
  out += " [options]\n";
  for (const char* group : kGroups) {
    std::string section;
    for (TCLAP::Arg* a : args) {
      const std::string& name = a->getName();
      if (name.empty() || name == "ignore_rest" || name == "version" || name == "help" || is_alias(*a)) continue;
      if (help_group(name) != group) continue;
      section += std::string(kOptionCol, ' ') + option_form(*a) + "\n";
      section += name == "preset" ? preset_table() : wrapped(a->getDescription(), kHelpCol);
    }
    if (!section.empty()) out += std::string("\n") + group + ":\n" + section;
  }
  out += "\n  -h, --help   this list;  --version   the version\n";
  return out;
}

namespace {

// A table cell: one line, with the table's bars escaped.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

// The Python keyword of a registration setting's option ("" for the command's files and run).
std::string python_keyword(const std::string& option) {
  for (const pipeline::SettingRow& row : pipeline::setting_rows()) {
    // The command's own (--device, --affine-only) too; a switch as the keyword's value it gives.
    if (row.option != option) continue;
    return row.switch_sets.empty() ? row.keyword : row.keyword + "=" + (row.switch_sets == "true" ? "True" : "False");
  }
  return "";
}

}  // namespace

std::string GroupedHelp::markdown(TCLAP::CmdLineInterface& cmd) const {
  std::vector<TCLAP::Arg*> args(cmd.getArgList().rbegin(), cmd.getArgList().rend());
  const bool keywords = subcommand_ == "register";  // Python's autoreg.register takes its settings as keywords
  std::string out = "## autoreg " + subcommand_ + "\n\n" + cell(cmd.getMessage()) + "\n";
  for (const char* group : kGroups) {
    std::string rows;
    for (TCLAP::Arg* a : args) {
      const std::string& name = a->getName();
      if (name.empty() || name == "ignore_rest" || name == "version" || name == "help" || is_alias(*a)) continue;
      if (help_group(name) != group) continue;
      std::string what = name == "preset" ? "named settings for an anatomy and motion (`autoreg register --help` lists them)"
                                          : a->getDescription();
      if (a->isRequired()) what = "(required) " + what;
      rows += "| `" + cell(option_form(*a)) + "` | " + cell(what) + (keywords ? " | " + python_keyword(name) : "") + " |\n";
    }
    if (rows.empty()) continue;
    out += std::string("\n### ") + group + " (" + subcommand_ + ")\n\n| option | what it does" +
           (keywords ? " | Python keyword" : "") + " |\n|---|---" + (keywords ? "|---" : "") + "|\n" + rows;
  }
  return out;
}

void GroupedHelp::usage(TCLAP::CmdLineInterface& cmd) {
  const char* format = std::getenv("AUTOREG_HELP_FORMAT");  // "markdown": docs/options.md's tables (scripts/options_doc.py)
  std::fputs((format && std::string(format) == "markdown" ? markdown(cmd) : text(cmd)).c_str(), stdout);
}

}  // namespace autoreg::apps
