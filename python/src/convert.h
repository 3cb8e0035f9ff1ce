// Between numpy arrays and autoreg's volumes: an image is an array indexed [k, j, i]
// (SimpleITK's and ITK's GetArrayFromImage order; the tensor's D, H, W) with a geometry
// dict {"spacing": (3,), "origin": (3,), "direction": (9,) row-major} in ITK's i, j, k
// order and LPS millimetres (python/autoreg/images.py builds both from whichever image
// kind the caller has).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <ATen/ATen.h>

#include <cstring>
#include <string>

#include "autoreg/io/volume.h"

namespace autoreg::python {

namespace py = pybind11;

inline io::Geometry geometry_of(const py::dict& g, const std::array<int64_t, 3>& size_kji) {
  io::Geometry out;
  out.size = {size_kji[2], size_kji[1], size_kji[0]};
  const auto numbers = [&](const char* key, double* dst, size_t n) {
    if (!g.contains(key)) return;
    const auto values = py::cast<std::vector<double>>(g[key]);
    if (values.size() != n) throw std::invalid_argument(std::string("geometry: '") + key + "' needs " + std::to_string(n) + " numbers");
    std::copy(values.begin(), values.end(), dst);
  };
  numbers("spacing", out.spacing.data(), 3);
  numbers("origin", out.origin.data(), 3);
  numbers("direction", out.direction.data(), 9);
  return out;
}

inline py::dict geometry_dict(const io::Geometry& g) {
  py::dict d;
  d["size"] = py::make_tuple(g.size[0], g.size[1], g.size[2]);
  d["spacing"] = py::make_tuple(g.spacing[0], g.spacing[1], g.spacing[2]);
  d["origin"] = py::make_tuple(g.origin[0], g.origin[1], g.origin[2]);
  py::list direction;
  for (double v : g.direction) direction.append(v);
  d["direction"] = py::tuple(direction);
  return d;
}

// A 3-D array as a 1×1×D×H×W tensor (a copy, float32 or int32).
template <typename T>
at::Tensor tensor_of(const py::array_t<T, py::array::c_style | py::array::forcecast>& a, const char* what) {
  if (a.ndim() != 3) throw std::invalid_argument(std::string(what) + ": a 3-D array is needed, got " + std::to_string(a.ndim()) + "-D");
  const auto type = std::is_same_v<T, float> ? at::kFloat : at::kInt;
  at::Tensor t = at::empty({1, 1, a.shape(0), a.shape(1), a.shape(2)}, type);
  std::memcpy(t.data_ptr(), a.data(), size_t(a.size()) * sizeof(T));
  return t;
}

template <typename T>
io::Volume volume_of(const py::array_t<T, py::array::c_style | py::array::forcecast>& a, const py::dict& g,
                     const char* what) {
  at::Tensor t = tensor_of<T>(a, what);
  return {t, geometry_of(g, {t.size(2), t.size(3), t.size(4)})};
}

// A tensor's values as a numpy array of its shape without the leading 1×1 (or 1×) dims
// given by `drop` (a copy).
template <typename T>
py::array_t<T> array_of(const at::Tensor& tensor, int drop) {
  const at::Tensor t = tensor.cpu().contiguous().to(std::is_same_v<T, float> ? at::kFloat : std::is_same_v<T, double> ? at::kDouble : at::kInt);
  std::vector<py::ssize_t> shape(t.sizes().begin() + drop, t.sizes().end());
  py::array_t<T> out(shape);
  std::memcpy(out.mutable_data(), t.data_ptr(), t.nbytes());
  return out;
}

}  // namespace autoreg::python
