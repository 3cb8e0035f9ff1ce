// The search's state in archives: in-memory snapshots (the last good state a fault rolls
// back to) and checkpoints on disk, one format.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>


#include "autoreg/registration/run_state.h"
#include "autoreg/search/searcher.h"

namespace autoreg::search {
namespace {

using registration::ModelFileError;

std::string text(double v) { return registration::exact_text(v); }

int64_t integer(const registration::Archive& a, const std::string& key, const std::string& path) {
  try {
    return std::stoll(a.field(key, path));
  } catch (const std::logic_error&) {
    throw ModelFileError(path + ": malformed field " + key);
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Searcher::fingerprint() const {
  const auto& o = options_;
  std::string terms;
  for (int i = 0; i < registration::kObjectiveTerms; ++i) {
    if (o.searched_terms[i]) terms += std::string(terms.empty() ? "" : ",") + registration::kObjectiveTermNames[i];
  }
  std::string grid;
  for (int d = 0; d < 3; ++d) grid += (d ? "x" : "") + std::to_string(info_.grid[d]);
  // Named as the command's options were when runs began recording them ("lr", not the
  // --learning-rate of today), so that a refused resume says which one changed; kept so
  // that earlier runs still resume.
  return {{"batch", std::to_string(o.batch)},
          {"mode", to_string(o.mode)},
          {"order", to_string(o.order)},
          {"path", to_string(o.path)},
          {"arch-path", to_string(o.architecture_path)},
          {"update-crop", text(o.update_crop)},
          {"weight-crop", text(o.weight_crop)},
          {"edges", to_string(o.edges)},
          {"arch-every", std::to_string(o.architecture_every)},
          {"objective-every", std::to_string(o.objective_every)},
          {"lr", text(o.weight_lr)},
          {"max-gradient-norm", text(o.max_gradient_norm)},
          {"arch-lr", text(o.architecture_lr)},
          {"arch-weight-decay", text(o.architecture_weight_decay)},
          {"objective-lr", text(o.objective_lr)},
          {"objective-scale", o.objective_scale_fixed ? "fixed" : "free"},
          {"max-gradient-spike", text(o.spike_factor)},
          {"warmup", text(o.warmup_fraction)},
          {"base-logit", text(o.base_logit)},
          {"dice-weight", text(o.dice_weight)},
          {"initial-objective", o.initial_objective.to_string()},
          {"terms", terms},
          {"latency-weight", text(o.latency_weight)},
          {"max-forward-ms", text(o.budget_ms)},
          {"augment", o.augment ? "1" : "0"},
          {"seed", std::to_string(o.seed)},
          {"grid", grid},
          {"base-genotype", info_.network.genotype.to_string()},
          {"training-subjects", std::to_string(sampler_.data().train.size())},
          {"validation-subjects", std::to_string(sampler_.data().validation.size())},
          {"atlas-mode", sampler_.data().atlas ? "1" : "0"}};
}

registration::Archive Searcher::state() const {
  registration::Archive a;
  registration::save_run_fields(fingerprint(), a);
  a.fields.emplace_back("search.step", std::to_string(step_));
  a.fields.emplace_back("search.steps", std::to_string(options_.steps));
  run_.guard().save(a, "search.");
  // Which network validate() evaluates after the last step (a decoupled evaluation of
  // this checkpoint validates that one).
  a.fields.emplace_back("search.warming_up", warming_up_ ? "1" : "0");
  a.fields.emplace_back("search.fixed_genotype", fixed_genotype_ ? fixed_genotype_->to_string() : "-");
  for (const auto& [key, value] : notes) a.fields.emplace_back("note." + key, value);
  for (const auto& p : supernet_->network_ptr()->named_parameters()) {
    a.tensors.emplace_back("param/" + p.key(), p.value().detach().cpu().clone());
  }
  a.tensors.emplace_back("alpha", supernet_->alpha().detach().clone());
  a.tensors.emplace_back("rho", objective_.rho().detach().clone());
  registration::save_adam_state(*weights_adam_, supernet_->weights(), "adam_weights/", a);
  registration::save_adam_state(architecture_->optimiser(), {supernet_->alpha()}, "adam_alpha/", a);
  registration::save_adam_state(objective_.optimiser(), {objective_.rho()}, "adam_lambda/", a);
  for (auto& [name, t] : a.tensors) {
    if (name.rfind("adam_", 0) == 0) t = t.cpu().clone();
  }
  return a;
}

void Searcher::load_state(const registration::Archive& a, const std::string& path) {
  const auto stored = registration::tensors_by_name(a);
  c10::AutoGradMode no_grad(false);
  for (const auto& p : supernet_->network_ptr()->named_parameters()) {
    auto it = stored.find("param/" + p.key());
    if (it == stored.end() || it->second.sizes() != p.value().sizes()) {
      throw ModelFileError(path + ": weight '" + p.key() + "' is missing or has another shape");
    }
    p.value().copy_(it->second);
  }
  for (const auto& [name, target] : {std::pair<const char*, at::Tensor>{"alpha", supernet_->alpha()}, {"rho", objective_.rho()}}) {
    auto it = stored.find(name);
    if (it == stored.end() || it->second.sizes() != target.sizes()) {
      throw ModelFileError(path + ": '" + name + "' is missing or has another shape");
    }
    at::Tensor(target).copy_(it->second);
  }
  registration::load_adam_state(*weights_adam_, supernet_->weights(), "adam_weights/", stored, device_, path);
  registration::load_adam_state(architecture_->optimiser(), {supernet_->alpha()}, "adam_alpha/", stored, at::kCPU, path);
  registration::load_adam_state(objective_.optimiser(), {objective_.rho()}, "adam_lambda/", stored, at::kCPU, path);
  step_ = integer(a, "search.step", path);
  options_.steps = integer(a, "search.steps", path);
  // The guard (its running average absent from checkpoints written before it: it starts
  // again with the next phase).
  run_.guard().load(a, path, "search.");
  warming_up_ = a.has_field("search.warming_up") && a.field("search.warming_up", path) == "1";
  const std::string fixed = a.field("search.fixed_genotype", path);
  try {
    fixed_genotype_ = fixed == "-" ? std::nullopt : std::optional(registration::Genotype::parse(fixed));
  } catch (const std::invalid_argument& e) {
    throw ModelFileError(path + ": search.fixed_genotype: " + e.what());
  }
  notes.clear();
  for (const auto& [key, value] : a.fields) {
    if (key.rfind("note.", 0) == 0) notes[key.substr(5)] = value;
  }
  set_step_scale();
}

void Searcher::resume(const std::string& path) { restore(run_.read(path), path); }

void Searcher::restore(const registration::Archive& a, const std::string& path) {
  // Checkpoints from before batches took one pair per step.
  registration::check_run_fields(a, path, fingerprint(), "a search", {{"batch", "1"}});
  run_.restore(a, path);
}

}  // namespace autoreg::search
