// Adam's per-parameter state in archives (archive.h): what training and search
// checkpoints store so that a resumed run continues exactly.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "autoreg/registration/archive.h"

namespace torch::optim {
class Adam;
}

namespace autoreg::registration {

// Appends the state of every parameter that has one as "<prefix><i>/step|exp_avg|exp_avg_sq".
void save_adam_state(const torch::optim::Adam& adam, const std::vector<at::Tensor>& params, const std::string& prefix,
                     Archive& archive);
// Replaces the optimiser's state by the stored one (parameters without stored state get
// none). `stored`: the archive's tensors by name. Throws ModelFileError (naming `path`)
// when a stored moment's shape does not match its parameter's.
void load_adam_state(torch::optim::Adam& adam, const std::vector<at::Tensor>& params, const std::string& prefix,
                     const std::unordered_map<std::string, at::Tensor>& stored, const at::Device& device,
                     const std::string& path);

// An archive's tensors by name.
std::unordered_map<std::string, at::Tensor> tensors_by_name(const Archive& archive);

}  // namespace autoreg::registration
