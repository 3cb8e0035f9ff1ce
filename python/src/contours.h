// autoreg._autoreg's RT Structure Set functions (python/autoreg/contours.py wraps them):
// a structure set read and filled on its DICOM series' grid, and masks on a series' grid
// written as a new structure set on it (the rt/ room, as `register --out-contours` writes).
#pragma once

#include <pybind11/pybind11.h>

namespace autoreg::python {

void add_contours(pybind11::module_& m);

}  // namespace autoreg::python
