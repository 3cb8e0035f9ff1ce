// `autoreg <subcommand> --help`: the options in groups (inputs, outputs, presets and
// models, settings, running), each with its help wrapped under it, and the presets as a
// table, in place of TCLAP's one alphabet-free list.
#pragma once

#include <tclap/CmdLine.h>

#include <string>

namespace autoreg::apps {

// The group an option's help lists it in, from its name ("fixed" → "Inputs").
std::string help_group(const std::string& option);

class GroupedHelp : public TCLAP::StdOutput {
 public:
  explicit GroupedHelp(std::string subcommand) : subcommand_(std::move(subcommand)) {}
  void usage(TCLAP::CmdLineInterface& cmd) override;
  // The help as text (what usage() prints).
  std::string text(TCLAP::CmdLineInterface& cmd) const;
  // The options as Markdown tables, a table per group (usage() prints it when
  // AUTOREG_HELP_FORMAT=markdown; scripts/options_doc.py writes docs/options.md from it).
  std::string markdown(TCLAP::CmdLineInterface& cmd) const;

 private:
  std::string subcommand_;
};

}  // namespace autoreg::apps
