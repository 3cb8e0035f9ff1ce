#include "autoreg/registration/labels.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <iterator>

namespace autoreg::registration {

at::Tensor one_hot(const at::Tensor& labels, const std::vector<int64_t>& values) {
  std::vector<at::Tensor> channels;
  for (int64_t v : values) channels.push_back((labels == v).to(at::kFloat));
  return at::cat(channels, 1);
}

std::vector<int64_t> shared_labels(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor ua = std::get<0>(at::_unique(a.reshape(-1).cpu())).to(at::kLong);
  const at::Tensor ub = std::get<0>(at::_unique(b.reshape(-1).cpu())).to(at::kLong);
  std::vector<int64_t> va(ua.data_ptr<int64_t>(), ua.data_ptr<int64_t>() + ua.numel());
  std::vector<int64_t> vb(ub.data_ptr<int64_t>(), ub.data_ptr<int64_t>() + ub.numel());
  std::sort(va.begin(), va.end());
  std::sort(vb.begin(), vb.end());
  std::vector<int64_t> out;
  std::set_intersection(va.begin(), va.end(), vb.begin(), vb.end(), std::back_inserter(out));
  out.erase(std::remove(out.begin(), out.end(), 0), out.end());
  return out;
}

}  // namespace autoreg::registration
