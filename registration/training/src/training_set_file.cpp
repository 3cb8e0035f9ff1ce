#include "autoreg/registration/training_set_file.h"

#include <ATen/ATen.h>

#include <limits>
#include <map>
#include <stdexcept>

#include "autoreg/registration/archive.h"

namespace autoreg::registration {
namespace {

int64_t count_field(const Archive& a, const std::string& key, const std::string& path) {
  try {
    const int64_t n = std::stoll(a.field(key, path));
    if (n < 0 || n > 100000) throw std::out_of_range(key);
    return n;
  } catch (const std::logic_error&) {
    throw ModelFileError(path + ": malformed field " + key);
  }
}

}  // namespace

void write_training_set(const std::string& path, const TrainingSet& set, const ModelInfo& info) {
  Archive a = info_archive(info);
  std::vector<std::pair<const Subject*, std::string>> all;
  for (const auto& s : set.train) all.emplace_back(&s, "train");
  for (const auto& s : set.validation) all.emplace_back(&s, "val");
  if (set.atlas) all.emplace_back(&*set.atlas, "atlas");
  a.fields.emplace_back("subjects", std::to_string(all.size()));
  for (size_t k = 0; k < all.size(); ++k) {
    const Subject& s = *all[k].first;
    const std::string key = "subject." + std::to_string(k);
    std::string name = s.name;
    for (char& c : name) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    a.fields.emplace_back(key + ".name", name.empty() ? "-" : name);
    a.fields.emplace_back(key + ".split", all[k].second);
    const std::string tensor = "subject/" + std::to_string(k) + "/";
    if (s.image.defined()) a.tensors.emplace_back(tensor + "image", s.image.detach().to(at::kFloat).cpu().contiguous());
    if (s.labels.defined()) {
      const at::Tensor l = s.labels.detach().cpu();
      if (l.numel() > 0 && (l.min().item<int64_t>() < std::numeric_limits<int16_t>::min() ||
                            l.max().item<int64_t>() > std::numeric_limits<int16_t>::max())) {
        throw std::invalid_argument(s.name + ": label values beyond int16 cannot be packed");
      }
      a.tensors.emplace_back(tensor + "labels", l.to(at::kShort).contiguous());
    }
  }
  if (set.intensity_table.defined()) a.tensors.emplace_back("intensity_table", set.intensity_table.detach().cpu().contiguous());
  write_archive(path, "TRAINING_SET", a);
}

TrainingSetFile read_training_set(const std::string& path) {
  const Archive a = read_archive(path, "TRAINING_SET");
  TrainingSetFile out;
  out.info = info_from_archive(a, path);
  std::map<std::string, at::Tensor> tensors(a.tensors.begin(), a.tensors.end());
  const auto& g = out.info.grid;
  const int64_t n = count_field(a, "subjects", path);
  for (int64_t k = 0; k < n; ++k) {
    const std::string key = "subject." + std::to_string(k), tensor = "subject/" + std::to_string(k) + "/";
    Subject s;
    s.name = a.field(key + ".name", path);
    const std::string split = a.field(key + ".split", path);
    for (const char* part : {"image", "labels"}) {
      auto it = tensors.find(tensor + part);
      if (it == tensors.end()) continue;
      if (it->second.sizes() != at::IntArrayRef({1, 1, g[0], g[1], g[2]})) {
        throw ModelFileError(path + ": " + tensor + part + " is not on the set's grid");
      }
      (std::string(part) == "image" ? s.image : s.labels) =
          std::string(part) == "image" ? it->second.to(at::kFloat) : it->second.to(at::kInt);
    }
    if (!s.image.defined() && !s.labels.defined()) throw ModelFileError(path + ": subject " + s.name + " has no volume");
    if (split == "train") {
      out.set.train.push_back(std::move(s));
    } else if (split == "val") {
      out.set.validation.push_back(std::move(s));
    } else if (split == "atlas" && !out.set.atlas) {
      out.set.atlas = std::move(s);
    } else {
      throw ModelFileError(path + ": " + key + ".split '" + split + "' is not train, val or one atlas");
    }
  }
  auto table = tensors.find("intensity_table");
  if (table != tensors.end()) out.set.intensity_table = table->second;
  return out;
}

}  // namespace autoreg::registration
