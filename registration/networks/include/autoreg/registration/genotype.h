// A genotype: the operation on each of the 12 edges of the AutoReg network (docs/design.md, "The method"):
//   edges 0–5   feature cell F (1→16 stride 2, 16→16, 16→16, 16→32 stride 2, 32→32, 32→32)
//   edges 6–8   deformation cell D at 1/4 scale (in→48, 48→32, 32→16)
//   edges 9–11  deformation cell D at 1/2 scale (in→48, 48→32, 32→16)
// Written as text: the 12 operation names (operations.h) in edge order, separated by
// spaces, commas or newlines; '#' starts a comment. What the search writes and
// `autoreg train --genotype FILE` reads.
#pragma once

#include <array>
#include <string>

namespace autoreg::registration {

inline constexpr int kGenotypeEdges = 12;

struct Genotype {
  std::array<std::string, kGenotypeEdges> edges;

  // The default: 3³ convolutions on every edge.
  static Genotype standard();
  // Parses the text form. Throws std::invalid_argument naming the problem (wrong count,
  // unknown operation and its position).
  static Genotype parse(const std::string& text);
  // The text form, on one line: parse(to_string()) == *this.
  std::string to_string() const;

  bool operator==(const Genotype& other) const { return edges == other.edges; }
};

// Reads a genotype file; throws std::invalid_argument naming the file on any problem.
Genotype read_genotype(const std::string& path);

}  // namespace autoreg::registration
