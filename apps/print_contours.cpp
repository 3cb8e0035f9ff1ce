#include "print_contours.h"

#include <cstdio>
#include <string>

namespace autoreg::apps {

void print_contours(const nlohmann::json& contours) {
  const std::string written = contours.value("written", std::string());
  std::printf("carried %zu structures of %s%s%s\n", contours["structures"].size(),
              contours["moving"].get<std::string>().c_str(), written.empty() ? "" : " into ", written.c_str());
  for (const auto& s : contours["structures"]) {
    std::printf("  %-24s %3zu contours, %7.1f -> %7.1f mL%s", s["name"].get<std::string>().c_str(),
                s["contours"].get<size_t>(), s["volume_drawn_ml"].get<double>(), s["volume_carried_ml"].get<double>(),
                s["cut_by_edge"].get<bool>() ? ", cut by the fixed image's edge" : "");
    if (s.contains("dice")) {
      std::printf(", Dice against %s %s%.3f", s["compared_with"].get<std::string>().c_str(),
                  s.contains("dice_before") ? (std::to_string(s["dice_before"].get<double>()).substr(0, 5) + " -> ").c_str() : "",
                  s["dice"].get<double>());
    }
    std::printf("\n");
  }
}

}  // namespace autoreg::apps
