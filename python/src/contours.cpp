#include "contours.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "autoreg/io/volume.h"
#include "autoreg/pair/contours_job.h"
#include "autoreg/rt/rasterise.h"
#include "autoreg/rt/series.h"
#include "autoreg/rt/structure_set.h"

namespace autoreg::python {
namespace {

namespace py = pybind11;
using MaskArray = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

rt::DicomSeries series_of(const std::string& folder) {
  return pipeline::read_series_folder(folder, "give the DICOM series' folder (the structure set is drawn on its slices)");
}

py::dict grid_dict(const rt::Grid& g) {
  py::dict d;
  d["spacing"] = py::make_tuple(g.spacing[0], g.spacing[1], g.spacing[2]);
  d["origin"] = py::make_tuple(g.origin[0], g.origin[1], g.origin[2]);
  py::list direction;
  for (double v : g.direction) direction.append(v);
  d["direction"] = py::tuple(direction);
  d["size"] = py::make_tuple(g.size[0], g.size[1], g.size[2]);
  return d;
}

// Every structure with a closed contour, filled on the series' grid ([k, j, i] uint8).
py::tuple read_structures(const std::string& rtstruct, const std::string& folder) {
  const rt::DicomSeries series = series_of(folder);
  const rt::StructureSet set = pipeline::read_structure_set_on(rtstruct, series, folder);
  py::list structures;
  const auto& n = series.grid.size;
  for (const rt::Roi& roi : set.rois) {
    if (roi.contours.empty()) continue;
    const rt::Rasterised filled = rt::rasterise(roi, series.grid, rtstruct);
    MaskArray mask({py::ssize_t(n[2]), py::ssize_t(n[1]), py::ssize_t(n[0])});
    std::memcpy(mask.mutable_data(), filled.mask.data(), filled.mask.size());
    py::dict s;
    s["number"] = roi.number;
    s["name"] = roi.name;
    s["colour"] = py::make_tuple(roi.color[0], roi.color[1], roi.color[2]);
    s["interpreted_type"] = roi.interpreted_type;
    s["mask"] = mask;
    structures.append(s);
  }
  return py::make_tuple(structures, grid_dict(series.grid), set.label);
}

// Masks on the series' grid written as a new structure set on it (contours_job.h:
// write_structure_masks). Returns the number of contours written.
int write_structures(const std::string& path, const py::list& structures, const std::string& folder,
                     const std::string& description) {
  const rt::DicomSeries series = series_of(folder);
  const auto& n = series.grid.size;
  std::vector<pipeline::StructureMask> masks;
  for (const py::handle& item : structures) {
    const py::dict s = py::cast<py::dict>(item);
    pipeline::StructureMask m;
    m.roi.number = py::cast<int>(s["number"]);
    m.roi.name = py::cast<std::string>(s["name"]);
    const auto colour = py::cast<std::vector<int>>(s["colour"]);
    if (colour.size() != 3) throw io::IoError("structure " + m.roi.name + ": colour needs 3 values (0-255)");
    m.roi.color = {colour[0], colour[1], colour[2]};
    if (s.contains("interpreted_type")) m.roi.interpreted_type = py::cast<std::string>(s["interpreted_type"]);
    const MaskArray mask = py::cast<MaskArray>(s["mask"]);
    if (mask.ndim() != 3 || mask.shape(0) != n[2] || mask.shape(1) != n[1] || mask.shape(2) != n[0]) {
      throw io::IoError("structure " + m.roi.name + ": its mask is not on the grid of " + folder + " (" +
                        std::to_string(n[2]) + "×" + std::to_string(n[1]) + "×" + std::to_string(n[0]) + ", [k, j, i])");
    }
    m.mask.assign(mask.data(), mask.data() + mask.size());
    masks.push_back(std::move(m));
  }
  py::gil_scoped_release release;
  return pipeline::write_structure_masks(path, std::move(masks), series, description);
}

}  // namespace

void add_contours(py::module_& m) {
  m.def("read_structures", &read_structures);
  m.def("write_structures", &write_structures);
}

}  // namespace autoreg::python
