// What training and search checkpoints share besides the weights: Adam's per-parameter
// state, and the run's options by name, so that a resumed run continues exactly and a
// checkpoint of another run is refused naming the option that differs.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "autoreg/base/number_text.h"
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

// The shortest text that reads back as `v` (for options kept in checkpoints).
using base::exact_text;

// Appends `fingerprint` as fields "run.<name>".
void save_run_fields(const std::vector<std::pair<std::string, std::string>>& fingerprint, Archive& archive);
// Throws ModelFileError "<path>: a checkpoint of <what> with other options, data or
// network: <name> was X, is Y now" at the first field "<prefix><name>" that differs. A
// field the checkpoint lacks reads as `absent` (a newer option's default, for older
// checkpoints).
void check_run_fields(const Archive& archive, const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& fingerprint, const std::string& what,
                      const std::unordered_map<std::string, std::string>& absent = {},
                      const std::string& prefix = "run.");

// An archive's tensors by name.
std::unordered_map<std::string, at::Tensor> tensors_by_name(const Archive& archive);

}  // namespace autoreg::registration
