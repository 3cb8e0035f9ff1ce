#include "autoreg/registration/fault_guard.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autoreg/registration/run_state.h"

namespace autoreg::registration {

void FaultGuard::check(double gradient_norm, const std::string& phase) const {
  if (!std::isfinite(gradient_norm)) throw StepFault("non-finite gradient");
  if (spike_factor_ > 0 && phase == phase_ && samples_ >= kSpikeSamples && gradient_norm > spike_factor_ * average_) {
    std::ostringstream why;
    why << "gradient norm " << gradient_norm << " over " << spike_factor_ << "× its running average " << average_
        << " (diverging)";
    throw StepFault(why.str());
  }
}

void FaultGuard::accepted(int64_t steps_done, double gradient_norm, const std::string& phase) {
  if (steps_done > record_.last_fault_step) record_.in_a_row = 0;
  if (phase != phase_) {
    phase_ = phase;
    samples_ = 0;
    average_ = 0;
  }
  ++samples_;
  average_ += (gradient_norm - average_) / double(std::min(samples_, kSpikeSamples));
}

FaultGuard::Record FaultGuard::faulted(int64_t at_step, const std::string& why, const std::string& who,
                                       const std::string& advice) const {
  Record r = record_;
  ++r.rollbacks;
  ++r.in_a_row;
  r.last_fault_step = std::max(r.last_fault_step, at_step);
  r.lr_scale *= 0.5;
  if (r.in_a_row > max_rollbacks_) {
    throw std::runtime_error(who + " stopped: " + std::to_string(r.in_a_row) + " faulty steps in a row (" + why +
                             " at step " + std::to_string(at_step) + "), even at smaller step sizes; " + advice);
  }
  return r;
}

void FaultGuard::save(Archive& a, const std::string& prefix) const {
  a.fields.emplace_back(prefix + "lr_scale", exact_text(record_.lr_scale));
  a.fields.emplace_back(prefix + "rollbacks", std::to_string(record_.rollbacks));
  a.fields.emplace_back(prefix + "rollbacks_in_a_row", std::to_string(record_.in_a_row));
  a.fields.emplace_back(prefix + "last_fault_step", std::to_string(record_.last_fault_step));
  a.fields.emplace_back(prefix + "gradient_average", exact_text(average_));
  a.fields.emplace_back(prefix + "gradient_samples", std::to_string(samples_));
  a.fields.emplace_back(prefix + "gradient_phase", phase_.empty() ? "-" : phase_);
}

void FaultGuard::load(const Archive& a, const std::string& path, const std::string& prefix) {
  const auto number = [&](const std::string& name, double fallback) {
    const std::string key = prefix + name;
    if (!a.has_field(key)) return fallback;
    const std::string text = a.field(key, path);
    try {
      size_t used = 0;
      const double v = std::stod(text, &used);
      if (used == text.size() && std::isfinite(v)) return v;
    } catch (const std::logic_error&) {
    }
    throw ModelFileError(path + ": malformed field " + key + " '" + text + "'");
  };
  record_.lr_scale = number("lr_scale", 1);
  record_.rollbacks = int64_t(number("rollbacks", 0));
  record_.in_a_row = int64_t(number("rollbacks_in_a_row", 0));
  record_.last_fault_step = int64_t(number("last_fault_step", -1));
  average_ = number("gradient_average", 0);
  samples_ = int64_t(number("gradient_samples", 0));
  const std::string phase = a.has_field(prefix + "gradient_phase") ? a.field(prefix + "gradient_phase", path) : "-";
  phase_ = phase == "-" ? "" : phase;
}

}  // namespace autoreg::registration
