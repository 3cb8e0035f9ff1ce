// The search's choices as enums, with the names the command line, the checkpoints and
// genotype.json use for them: one name table each (base/names.h); parse_*(name) throws
// std::invalid_argument listing the names allowed; to_string gives the name back.
#pragma once

#include <string>

#include "autoreg/base/names.h"

namespace autoreg::search {

enum class Mode { Joint, Sequential };       // ω, α and λ in one loop, or α then λ
enum class Order { First, Second };          // α's gradient
enum class EdgeSet { All, Deformation, None };  // the searched edges: 12, the 6 D-cell ones, none (λ only)
enum class Path { Mixed, Sampled };          // DARTS (every allowed candidate) or GDAS (one per edge)

inline constexpr base::NameTable<Mode, 2> kModeNames{"mode", {{{Mode::Joint, "joint"}, {Mode::Sequential, "sequential"}}}};
inline constexpr base::NameTable<Order, 2> kOrderNames{"order", {{{Order::First, "first"}, {Order::Second, "second"}}}};
inline constexpr base::NameTable<EdgeSet, 3> kEdgeSetNames{
    "edges", {{{EdgeSet::All, "all"}, {EdgeSet::Deformation, "deformation"}, {EdgeSet::None, "none"}}}};
inline constexpr base::NameTable<Path, 2> kPathNames{"path", {{{Path::Mixed, "mixed"}, {Path::Sampled, "sampled"}}}};

inline const char* to_string(Mode m) { return kModeNames.name(m); }
inline const char* to_string(Order o) { return kOrderNames.name(o); }
inline const char* to_string(EdgeSet e) { return kEdgeSetNames.name(e); }
inline const char* to_string(Path p) { return kPathNames.name(p); }

inline Mode parse_mode(const std::string& name) { return kModeNames.parse(name); }
inline Order parse_order(const std::string& name) { return kOrderNames.parse(name); }
inline EdgeSet parse_edge_set(const std::string& name) { return kEdgeSetNames.parse(name); }
inline Path parse_path(const std::string& name) { return kPathNames.parse(name); }

}  // namespace autoreg::search
