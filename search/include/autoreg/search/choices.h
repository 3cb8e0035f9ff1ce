// The search's choices as enums, with the names the command line, the checkpoints and
// genotype.json use for them: parse_*(name) throws std::invalid_argument listing the
// names allowed; to_string gives the name back.
#pragma once

#include <string>

namespace autoreg::search {

enum class Mode { Joint, Sequential };       // ω, α and λ in one loop, or α then λ
enum class Order { First, Second };          // α's gradient
enum class EdgeSet { All, Deformation, None };  // the searched edges: 12, the 6 D-cell ones, none (λ only)
enum class Path { Mixed, Sampled };          // DARTS (every allowed candidate) or GDAS (one per edge)

const char* to_string(Mode m);
const char* to_string(Order o);
const char* to_string(EdgeSet e);
const char* to_string(Path p);

Mode parse_mode(const std::string& name);
Order parse_order(const std::string& name);
EdgeSet parse_edge_set(const std::string& name);
Path parse_path(const std::string& name);

}  // namespace autoreg::search
