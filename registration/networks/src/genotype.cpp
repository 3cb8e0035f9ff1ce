#include "autoreg/registration/genotype.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "autoreg/registration/operations.h"

namespace autoreg::registration {

Genotype Genotype::standard() {
  Genotype g;
  g.edges.fill("conv_3x3");
  return g;
}

Genotype Genotype::parse(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find('#'));
    for (char& c : line) {
      if (c == ',' || c == '\t' || c == '\r') c = ' ';
    }
    std::istringstream words(line);
    std::string w;
    while (words >> w) names.push_back(w);
  }
  if (names.size() != kGenotypeEdges) {
    throw std::invalid_argument("a genotype names 12 operations (6 feature-cell edges, then 3 + 3 "
                                "deformation-cell edges), got " + std::to_string(names.size()));
  }
  Genotype g;
  for (int e = 0; e < kGenotypeEdges; ++e) {
    if (!is_operation(names[e])) {
      // make_edge's message lists the known names.
      try {
        make_edge(names[e], 1, 1, 1);
      } catch (const std::invalid_argument& error) {
        throw std::invalid_argument("edge " + std::to_string(e) + ": " + error.what());
      }
    }
    g.edges[e] = names[e];
  }
  return g;
}

std::string Genotype::to_string() const {
  std::string s;
  for (const auto& e : edges) s += (s.empty() ? "" : " ") + e;
  return s;
}

Genotype read_genotype(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open the genotype file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return Genotype::parse(text.str());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

}  // namespace autoreg::registration
