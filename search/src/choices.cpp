#include "autoreg/search/choices.h"

#include <array>
#include <stdexcept>
#include <utility>

namespace autoreg::search {
namespace {

template <typename E, size_t N>
const char* name_of(E value, const std::array<std::pair<E, const char*>, N>& names) {
  for (const auto& [v, n] : names) {
    if (v == value) return n;
  }
  return "?";
}

template <typename E, size_t N>
E parse(const std::string& text, const std::array<std::pair<E, const char*>, N>& names, const char* what) {
  std::string allowed;
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i].second) return names[i].first;
    allowed += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + "'" + names[i].second + "'";
  }
  throw std::invalid_argument(std::string(what) + " must be " + allowed + ", got '" + text + "'");
}

constexpr std::array<std::pair<Mode, const char*>, 2> kModes{{{Mode::Joint, "joint"}, {Mode::Sequential, "sequential"}}};
constexpr std::array<std::pair<Order, const char*>, 2> kOrders{{{Order::First, "first"}, {Order::Second, "second"}}};
constexpr std::array<std::pair<EdgeSet, const char*>, 3> kEdgeSets{
    {{EdgeSet::All, "all"}, {EdgeSet::Deformation, "deformation"}, {EdgeSet::None, "none"}}};
constexpr std::array<std::pair<Path, const char*>, 2> kPaths{{{Path::Mixed, "mixed"}, {Path::Sampled, "sampled"}}};

}  // namespace

const char* to_string(Mode m) { return name_of(m, kModes); }
const char* to_string(Order o) { return name_of(o, kOrders); }
const char* to_string(EdgeSet e) { return name_of(e, kEdgeSets); }
const char* to_string(Path p) { return name_of(p, kPaths); }

Mode parse_mode(const std::string& name) { return parse(name, kModes, "mode"); }
Order parse_order(const std::string& name) { return parse(name, kOrders, "order"); }
EdgeSet parse_edge_set(const std::string& name) { return parse(name, kEdgeSets, "edges"); }
Path parse_path(const std::string& name) { return parse(name, kPaths, "path"); }

}  // namespace autoreg::search
