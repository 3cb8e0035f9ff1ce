// An enum's one name table: the names the command line, settings, Python, checkpoints and
// logs use for its values, from which it is parsed, printed and listed (in --help and in
// the message for a name it does not know). One table per choice; nothing else types the
// names.
//
//   inline constexpr base::NameTable<Fusion, 3> kFusionNames{
//       "fusion method", {{{Fusion::Majority, "majority"}, {Fusion::Weighted, "weighted"}, {Fusion::Jlf, "jlf"}}}};
//   kFusionNames.parse("jlf");       // Fusion::Jlf
//   kFusionNames.name(Fusion::Jlf);  // "jlf"
//   kFusionNames.names();            // {"majority", "weighted", "jlf"} (TCLAP's ValuesConstraint)
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autoreg::base {

template <typename E, std::size_t N>
struct NameTable {
  const char* what;  // what a message calls the choice ("similarity", "--validation")
  std::array<std::pair<E, const char*>, N> entries;

  // The value's name ("?" for a value the table lacks, which a switch would not allow).
  const char* name(E value) const {
    for (const auto& [v, n] : entries) {
      if (v == value) return n;
    }
    return "?";
  }
  // The value named `text`; Error("<what> must be 'a', 'b' or 'c', got 'x'") otherwise
  // (std::invalid_argument, or the caller's usage or settings error).
  template <typename Error = std::invalid_argument>
  E parse(std::string_view text) const {
    for (const auto& [v, n] : entries) {
      if (text == n) return v;
    }
    throw Error(std::string(what) + " must be " + allowed() + ", got '" + std::string(text) + "'");
  }
  bool contains(std::string_view text) const {
    for (const auto& entry : entries) {
      if (text == entry.second) return true;
    }
    return false;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries) out.emplace_back(entry.second);
    return out;
  }
  // "'a', 'b' or 'c'"
  std::string allowed() const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + "'" + entries[i].second + "'";
    return out;
  }
  // "a|b|c": the placeholder of an option's value in --help.
  std::string joined(const char* separator = "|") const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) out += std::string(i == 0 ? "" : separator) + entries[i].second;
    return out;
  }
};

// Where a computation runs, as --device, the settings, Python and the ITK filter name it.
// Every check of a device name above ops/ is this table's (ops::parse_device, in a room
// that may not use base/, checks the two names itself and whether CUDA is there).
enum class DeviceKind { Cpu, Cuda };
inline constexpr NameTable<DeviceKind, 2> kDeviceNames{"--device", {{{DeviceKind::Cpu, "cpu"}, {DeviceKind::Cuda, "cuda"}}}};

}  // namespace autoreg::base
