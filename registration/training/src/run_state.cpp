#include "autoreg/registration/run_state.h"

#include <ATen/ATen.h>
#include <torch/optim/adam.h>

#include <memory>

namespace autoreg::registration {

void save_adam_state(const torch::optim::Adam& adam, const std::vector<at::Tensor>& params, const std::string& prefix,
                     Archive& archive) {
  auto& state = const_cast<torch::optim::Adam&>(adam).state();
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = state.find(params[i].unsafeGetTensorImpl());
    if (it == state.end()) continue;
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*it->second);
    const std::string p = prefix + std::to_string(i) + "/";
    archive.tensors.emplace_back(p + "step", at::full({1}, s.step(), at::kLong));
    archive.tensors.emplace_back(p + "exp_avg", s.exp_avg());
    archive.tensors.emplace_back(p + "exp_avg_sq", s.exp_avg_sq());
  }
}

void load_adam_state(torch::optim::Adam& adam, const std::vector<at::Tensor>& params, const std::string& prefix,
                     const std::unordered_map<std::string, at::Tensor>& stored, const at::Device& device,
                     const std::string& path) {
  adam.state().clear();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string p = prefix + std::to_string(i) + "/";
    const auto step = stored.find(p + "step"), avg = stored.find(p + "exp_avg"), sq = stored.find(p + "exp_avg_sq");
    if (step == stored.end()) continue;
    if (avg == stored.end() || sq == stored.end() || avg->second.sizes() != params[i].sizes() ||
        sq->second.sizes() != params[i].sizes()) {
      throw ModelFileError(path + ": optimiser state " + p + " is missing or does not match its parameter");
    }
    auto s = std::make_unique<torch::optim::AdamParamState>();
    s->step(step->second.item<int64_t>());
    s->exp_avg(avg->second.to(device, params[i].scalar_type()).clone());
    s->exp_avg_sq(sq->second.to(device, params[i].scalar_type()).clone());
    adam.state()[params[i].unsafeGetTensorImpl()] = std::move(s);
  }
}

void save_run_fields(const std::vector<std::pair<std::string, std::string>>& fingerprint, Archive& archive) {
  for (const auto& [key, value] : fingerprint) archive.fields.emplace_back("run." + key, value);
}

void check_run_fields(const Archive& a, const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& fingerprint, const std::string& what,
                      const std::unordered_map<std::string, std::string>& absent, const std::string& prefix) {
  for (const auto& [key, now] : fingerprint) {
    const std::string stored = prefix + key;
    const auto missing = absent.find(key);
    const std::string then = a.has_field(stored) ? a.field(stored, path)
                             : missing != absent.end() ? missing->second
                                                       : "(not recorded)";
    if (then != now) {
      throw ModelFileError(path + ": a checkpoint of " + what + " with other options, data or network: " + key +
                           " was " + then + ", is " + now + " now");
    }
  }
}

std::unordered_map<std::string, at::Tensor> tensors_by_name(const Archive& archive) {
  std::unordered_map<std::string, at::Tensor> m;
  for (const auto& [name, t] : archive.tensors) m[name] = t;
  return m;
}

}  // namespace autoreg::registration
