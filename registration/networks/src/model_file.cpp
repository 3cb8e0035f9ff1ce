#include "autoreg/registration/model_file.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <sstream>
#include <unordered_map>

namespace autoreg::registration {
namespace {

template <typename T, size_t N>
std::string join(const std::array<T, N>& values) {
  std::ostringstream s;
  s.precision(17);
  for (size_t i = 0; i < N; ++i) s << (i ? " " : "") << values[i];
  return s.str();
}

template <typename T, size_t N>
std::array<T, N> split(const std::string& text, const std::string& key, const std::string& path) {
  std::istringstream s(text);
  std::array<T, N> out{};
  for (auto& v : out) s >> v;
  std::string extra;
  if (!s || (s >> extra)) {
    throw ModelFileError(path + ": field '" + key + "' should hold " + std::to_string(N) +
                         " numbers, got '" + text + "'");
  }
  return out;
}

bool flag(const std::string& text, const std::string& key, const std::string& path) {
  if (text == "1" || text == "0") return text == "1";
  throw ModelFileError(path + ": field '" + key + "' should be 0 or 1, got '" + text + "'");
}

// Three letters, one of each pair R/L, A/P, S/I.
bool valid_orientation(const std::string& code) {
  if (code.size() != 3) return false;
  static const std::string kPairs[] = {"RL", "AP", "SI"};
  int seen[3] = {0, 0, 0};
  for (char c : code) {
    bool known = false;
    for (int p = 0; p < 3; ++p) {
      if (kPairs[p].find(c) != std::string::npos) {
        ++seen[p];
        known = true;
      }
    }
    if (!known) return false;
  }
  return seen[0] == 1 && seen[1] == 1 && seen[2] == 1;
}

}  // namespace

Model make_model(const ModelInfo& info) {
  for (int d = 0; d < 3; ++d) {
    if (info.grid[d] <= 0 || !(info.spacing[d] > 0)) {
      throw std::invalid_argument("a model's grid sizes and spacings must be positive");
    }
  }
  Model m{info, make_network(info.network)};
  for (int d = 0; d < 3; ++d) {
    if (info.grid[d] % m.network->size_multiple() != 0) {
      throw std::invalid_argument("the " + info.network.kind + " network needs grid sizes that are multiples of " +
                                  std::to_string(m.network->size_multiple()) + ", got " + join(info.grid));
    }
  }
  return m;
}

Archive info_archive(const ModelInfo& i) {
  Archive a;
  a.fields = {{"network", i.network.kind},
              {"genotype", i.network.genotype.to_string()},
              {"diffeomorphic", i.network.diffeomorphic ? "1" : "0"},
              {"integration_steps", std::to_string(i.network.integration_steps)},
              {"matching_cost", i.network.matching_cost ? "1" : "0"},
              {"grid", join(i.grid)},
              {"spacing_mm", join(i.spacing)},
              {"normalization_percentiles", join(i.normalization)}};
  if (!i.orientation.empty()) a.fields.emplace_back("orientation", i.orientation);
  if (i.network.feature_transforms) {
    a.fields.emplace_back("feature_transforms", "1");
    a.format = 3;  // an older autoreg would refuse its γ and β as surplus weights
  }
  for (const auto& [key, value] : i.notes) {
    std::string v = value;
    for (char& c : v) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    a.fields.emplace_back("note." + key, v);
  }
  return a;
}

Archive model_archive(const Model& model) {
  // What the network holds decides (its layers may have been added to it alone).
  ModelInfo info = model.info;
  info.network.feature_transforms = model.network->has_feature_transforms();
  Archive a = info_archive(info);
  for (const auto& p : model.network->named_parameters()) a.tensors.emplace_back("param/" + p.key(), p.value());
  return a;
}

ModelInfo info_from_archive(const Archive& a, const std::string& path) {
  ModelInfo info;
  info.network.kind = a.field("network", path);
  try {
    info.network.genotype = Genotype::parse(a.field("genotype", path));
  } catch (const std::invalid_argument& e) {
    throw ModelFileError(path + ": genotype: " + e.what());
  }
  info.network.diffeomorphic = flag(a.field("diffeomorphic", path), "diffeomorphic", path);
  info.network.integration_steps = split<int64_t, 1>(a.field("integration_steps", path), "integration_steps", path)[0];
  info.network.matching_cost = flag(a.field("matching_cost", path), "matching_cost", path);
  info.grid = split<int64_t, 3>(a.field("grid", path), "grid", path);
  info.spacing = split<double, 3>(a.field("spacing_mm", path), "spacing_mm", path);
  info.normalization = split<double, 2>(a.field("normalization_percentiles", path), "normalization_percentiles", path);
  if (a.has_field("orientation")) {
    info.orientation = a.field("orientation", path);
    if (!valid_orientation(info.orientation)) {
      throw ModelFileError(path + ": malformed orientation '" + info.orientation +
                           "' (three letters, one of R/L, A/P, S/I each)");
    }
  }
  if (a.has_field("feature_transforms")) {
    info.network.feature_transforms = flag(a.field("feature_transforms", path), "feature_transforms", path);
  }
  for (const auto& [key, value] : a.fields) {
    if (key.rfind("note.", 0) == 0) info.notes[key.substr(5)] = value;
  }
  return info;
}

Model model_from_archive(const Archive& a, const std::string& path) {
  const ModelInfo info = info_from_archive(a, path);
  Model model;
  try {
    model = make_model(info);
  } catch (const std::invalid_argument& e) {
    throw ModelFileError(path + ": " + e.what());
  }
  std::unordered_map<std::string, at::Tensor> stored;
  for (const auto& [name, t] : a.tensors) {
    if (name.rfind("param/", 0) == 0) stored[name.substr(6)] = t;
  }
  const auto params = model.network->named_parameters();
  if (stored.size() != params.size()) {
    throw ModelFileError(path + ": holds " + std::to_string(stored.size()) + " weight tensors, its " +
                         info.network.kind + " network has " + std::to_string(params.size()));
  }
  c10::AutoGradMode no_grad(false);
  for (const auto& p : params) {
    auto it = stored.find(p.key());
    if (it == stored.end()) throw ModelFileError(path + ": weight '" + p.key() + "' is missing");
    if (it->second.sizes() != p.value().sizes() || it->second.scalar_type() != p.value().scalar_type()) {
      std::ostringstream s;
      s << path << ": weight '" << p.key() << "' is " << it->second.sizes() << ", its network needs "
        << p.value().sizes();
      throw ModelFileError(s.str());
    }
    p.value().copy_(it->second);
  }
  return model;
}

void save_model(const std::string& path, const Model& model) {
  write_archive(path, "MODEL", model_archive(model));
}

void add_feature_transforms(Model& model) {
  model.info.network.feature_transforms = true;
  model.network->add_feature_transforms();
}

Model load_model(const std::string& path) { return model_from_archive(read_archive(path, "MODEL"), path); }

}  // namespace autoreg::registration
