#include "parse.h"

#include <algorithm>
#include <numeric>

#include "autoreg/base/errors.h"
#include "help.h"
#include "schema_args.h"

namespace autoreg::apps {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t(0));
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closest_options(const std::string& option, const std::vector<std::string>& known) {
  std::vector<std::pair<size_t, std::string>> near;
  for (const std::string& k : known) {
    const size_t d = edit_distance(option, k);
    const bool abbreviation = option.size() > 3 && k.rfind(option, 0) == 0;
    if (d <= std::max<size_t>(2, (k.size() - 2) / 3) || abbreviation) near.emplace_back(abbreviation ? 0 : d, k);
  }
  std::stable_sort(near.begin(), near.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < near.size() && i < 3; ++i) out.push_back(near[i].second);
  return out;
}

void parse(TCLAP::CmdLine& cmd, int argc, char** argv) {
  // --help lists the options in groups (help.h); the object outlives the parse, which is
  // the only time TCLAP prints.
  static GroupedHelp help("");
  std::string name = argc > 0 ? argv[0] : "";
  if (name.rfind("autoreg ", 0) == 0) name = name.substr(8);
  help = GroupedHelp(name);
  cmd.setOutput(&help);
  try {
    cmd.parse(argc, argv);
  } catch (const TCLAP::CmdLineParseException& e) {
    std::string word = e.argId();
    const std::string prefix = "Argument: ";
    if (word.rfind(prefix, 0) == 0) word = word.substr(prefix.size());
    if (e.error().find("Couldn't find match for argument") == std::string::npos || word.rfind('-', 0) != 0) throw;
    std::vector<std::string> known, listed;  // listed: not the older spellings (schema_args.h), which --help leaves out
    for (TCLAP::Arg* a : cmd.getArgList()) {
      if (a->getName().empty() || a->getName() == "ignore_rest") continue;
      known.push_back("--" + a->getName());
      if (!is_alias(*a)) listed.push_back(known.back());
    }
    const size_t equals = word.find('=');
    if (equals != std::string::npos) {
      const std::string name = word.substr(0, equals);
      if (std::find(known.begin(), known.end(), name) != known.end()) {
        throw base::UsageError("unknown option " + word + "; an option takes its value after a space: " + name + " " +
                               word.substr(equals + 1));
      }
      word = name;
    }
    const std::vector<std::string> near = closest_options(word, listed);
    std::string message = "unknown option " + word;
    for (size_t i = 0; i < near.size(); ++i) message += (i == 0 ? "; did you mean " : " or ") + near[i];
    message += near.empty() ? " (--help lists the options)" : "?";
    throw base::UsageError(message);
  }
}

}  // namespace autoreg::apps
