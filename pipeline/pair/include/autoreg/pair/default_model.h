// Where the model named "default" (`register --model default`, the ITK filter's
// SetModelFileName("default")) is: the model shipped with autoreg.
#pragma once

#include <stdexcept>
#include <string>

namespace autoreg::pipeline {

// No default model where one was looked for.
class NoDefaultModel : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// $AUTOREG_DEFAULT_MODEL when set; else share/autoreg/default.autoreg of the installation
// this library belongs to (found from the library's own location, so an installed tree
// can be moved); else the source tree's models/default.autoreg (a build tree). Throws
// NoDefaultModel naming the places looked at when none exists.
std::string default_model_path();

// `name` itself, or default_model_path() when it is "default".
std::string resolve_model_name(const std::string& name);

}  // namespace autoreg::pipeline
