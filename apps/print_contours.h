// The carried structures' lines (`register --moving-contours`, `apply --contours`).
#pragma once

#include <nlohmann/json.hpp>

namespace autoreg::apps {

// One line per carried structure: where it went, its volume drawn and carried, and its
// Dice against the fixed structure set's where one was given.
void print_contours(const nlohmann::json& contours);

}  // namespace autoreg::apps
