// Parsing a subcommand's options: TCLAP's, with an unknown option answered by the known
// ones closest to it.
#pragma once

#include <tclap/CmdLine.h>

#include <string>
#include <vector>

namespace autoreg::apps {

// cmd.parse(argc, argv); an option `cmd` does not know throws base::UsageError naming it
// and the closest known options ("unknown option --out-feld; did you mean --out-field?"),
// or pointing to --help when none is close.
void parse(TCLAP::CmdLine& cmd, int argc, char** argv);

// The options of `known` (each "--name") closest to `option` by edit distance, at most
// three, closest first: within a third of the name's length (at least 2 edits), or those
// it begins (an abbreviation).
std::vector<std::string> closest_options(const std::string& option, const std::vector<std::string>& known);

}  // namespace autoreg::apps
