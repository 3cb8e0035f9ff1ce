// autoreg._autoreg: the library's jobs for the Python package, on numpy arrays (no
// files, no subprocess). The Python side (python/autoreg/api.py) turns the caller's
// images into arrays and geometry dicts (convert.h) and back. Heavy work runs with the
// GIL released; errors become autoreg.InputError (bad input: the CLI's exit 2),
// autoreg.SettingsError (contradictory or out-of-range settings: exit 1) or
// RuntimeError, with the command line's messages.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <malloc.h>

#include "autoreg/io/field.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/points.h"
#include "autoreg/pair/default_model.h"
#include "autoreg/pair/evaluate_job.h"
#include "autoreg/runs/pack_job.h"
#include "autoreg/pair/frame.h"
#include "autoreg/pair/register_job.h"
#include "autoreg/pair/registration_settings.h"
#include "autoreg/registration/metrics.h"
#include "autoreg/rt/errors.h"
#include "contours.h"
#include "convert.h"
#include "settings.h"

namespace autoreg::python {
namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using LabelArray = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

// 1×3×D×H×W (channels x, y, z) → D×H×W×3, SimpleITK's and ITK's vector-image layout.
py::array_t<float> vectors_last(const at::Tensor& field) { return array_of<float>(field.permute({0, 2, 3, 4, 1}), 1); }

// D×H×W×3 LPS mm on `grid` → 1×3×D×H×W voxels.
at::Tensor field_voxels(const FloatArray& field, const io::Geometry& grid) {
  if (field.ndim() != 4 || field.shape(3) != 3 || field.shape(0) != grid.size[2] || field.shape(1) != grid.size[1] ||
      field.shape(2) != grid.size[0]) {
    throw io::IoError("field: a D×H×W×3 array on the grid of its geometry is needed");
  }
  at::Tensor t = at::empty({field.shape(0), field.shape(1), field.shape(2), 3}, at::kFloat);
  std::memcpy(t.data_ptr(), field.data(), t.nbytes());
  return io::physical_to_voxel(t.permute({3, 0, 1, 2}).unsqueeze(0).contiguous(), grid);
}

std::vector<std::array<double, 3>> points_of(const py::array_t<double, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 2 || a.shape(1) != 3) throw io::IoError("points: an N×3 array of LPS millimetres is needed");
  std::vector<std::array<double, 3>> out(a.shape(0));
  for (py::ssize_t r = 0; r < a.shape(0); ++r) out[r] = {a.at(r, 0), a.at(r, 1), a.at(r, 2)};
  return out;
}

py::dict register_arrays(const FloatArray& fixed, const py::dict& fixed_geometry, const FloatArray& moving,
                         const py::dict& moving_geometry, const py::dict& settings, const py::dict& extras,
                         const std::function<void(std::string, int, int64_t, int64_t, double)>& progress) {
  pipeline::RegisterJob job;
  job.fixed = "fixed";
  job.moving = "moving";
  job.options = pipeline::pair_options(settings_of(settings));
  job.options.inverse = extras.contains("inverse") && py::cast<bool>(extras["inverse"]);
  if (job.options.inverse) pipeline::check_invertible(job.options);
  pipeline::PairInputs in;
  in.fixed = volume_of<float>(fixed, fixed_geometry, "fixed");
  in.moving = volume_of<float>(moving, moving_geometry, "moving");
  const auto on_grid = [](const io::Volume& v, const io::Volume& image, const char* what) {
    if (!io::same_grid(v.geometry, image.geometry)) throw io::IoError(std::string(what) + ": not on the grid of its image");
    return v;
  };
  if (extras.contains("moving_labels")) {
    in.moving_labels = on_grid(volume_of<int32_t>(py::cast<LabelArray>(extras["moving_labels"]), moving_geometry, "moving_labels"), in.moving, "moving_labels");
  }
  if (extras.contains("fixed_labels")) {
    in.fixed_labels = on_grid(volume_of<int32_t>(py::cast<LabelArray>(extras["fixed_labels"]), fixed_geometry, "fixed_labels"), in.fixed, "fixed_labels");
  }
  if (extras.contains("fixed_mask")) {
    in.masks.fixed = pipeline::binary_mask(on_grid(volume_of<float>(py::cast<FloatArray>(extras["fixed_mask"]), fixed_geometry, "fixed_mask"), in.fixed, "fixed_mask").data, "fixed_mask");
  }
  if (extras.contains("moving_mask")) {
    in.masks.moving = pipeline::binary_mask(on_grid(volume_of<float>(py::cast<FloatArray>(extras["moving_mask"]), moving_geometry, "moving_mask"), in.moving, "moving_mask").data, "moving_mask");
  }
  if (extras.contains("fixed_points") != extras.contains("moving_points")) {
    throw io::IoError("landmarks need their match in the other image: give fixed_points and moving_points");
  }
  if (extras.contains("fixed_points")) {
    in.landmarks.fixed.points = points_of(py::cast<py::array_t<double>>(extras["fixed_points"]));
    in.landmarks.moving.points = points_of(py::cast<py::array_t<double>>(extras["moving_points"]));
    if (in.landmarks.fixed.points.size() != in.landmarks.moving.points.size()) {
      throw io::IoError("fixed_points and moving_points hold different numbers of points");
    }
  }
  if (progress) {
    const auto call = [progress](const char* stage, std::vector<int64_t> totals) {
      return [progress, stage, totals](int level, int64_t step, double loss) {
        py::gil_scoped_acquire gil;
        progress(stage, level, step, totals[size_t(level)], loss);
      };
    };
    job.options.affine.progress = call("affine", job.options.affine.iterations);
    job.options.deformable.progress = call(job.options.model ? "refine" : "deformable", pipeline::deformable_levels(job.options));
  }
  pipeline::PairOutputs out;
  pipeline::PairMetrics metrics;
  std::string summary;
  at::Tensor field, inverse;
  {
    py::gil_scoped_release release;
    pipeline::StageTimes times;
    out = pipeline::register_in_memory(job, in, times);
    metrics = pipeline::pair_metrics(job, in, out, times);
    summary = pipeline::pair_summary(job, out, metrics, times).dump();
    field = io::physical_field(out.result.displacement, in.fixed.geometry);
    if (out.result.inverse.defined()) inverse = io::physical_field(out.result.inverse, in.moving.geometry);
  }
  py::dict r;
  r["warped"] = array_of<float>(out.warped.data, 2);
  r["field"] = vectors_last(field);
  r["inverse"] = inverse.defined() ? py::object(vectors_last(inverse)) : py::none();
  r["warped_labels"] = out.warped_labels.data.defined() ? py::object(array_of<int32_t>(out.warped_labels.data, 2)) : py::none();
  r["affine"] = array_of<double>(out.result.affine, 0);
  r["summary"] = summary;
  return r;
}

// The C++ network's output for moving and fixed (N×1×D×H×W on the model grid): what the
// Python module is checked against.
py::tuple network_forward(const std::string& model_file, const FloatArray& moving, const FloatArray& fixed, bool inverse) {
  registration::Model model = registration::load_model(pipeline::resolve_model_name(model_file));
  const auto five = [](const FloatArray& a) {
    if (a.ndim() != 5) throw std::invalid_argument("network_forward: N×1×D×H×W arrays are needed");
    at::Tensor t = at::empty(std::vector<int64_t>(a.shape(), a.shape() + 5), at::kFloat);
    std::memcpy(t.data_ptr(), a.data(), t.nbytes());
    return t;
  };
  const at::Tensor m = five(moving), f = five(fixed);
  std::array<at::Tensor, 2> out;
  {
    py::gil_scoped_release release;
    c10::AutoGradMode no_grad(false);
    model.network->eval();
    out = inverse ? model.network->forward_with_inverse(m, f) : std::array<at::Tensor, 2>{model.network->forward(m, f), at::Tensor()};
  }
  return py::make_tuple(array_of<float>(out[0], 0), out[1].defined() ? py::object(array_of<float>(out[1], 0)) : py::none());
}

// The model's inputs for a pair, as `register --model` makes them: both images
// normalised (the model's percentiles), the model frame of the fixed image, both sampled
// on it (the moving one through `affine`, fixed → moving points, identity when None).
py::dict model_inputs(const FloatArray& fixed, const py::dict& fixed_geometry, const FloatArray& moving,
                      const py::dict& moving_geometry, const std::string& model_file, const py::object& affine) {
  if (model_file.empty()) throw base::UsageError("model: a model file (.autoreg) or 'default', not ''");
  pipeline::RegistrationSettings settings;  // register's defaults with the model, translated as register does
  settings.model = model_file;
  const pipeline::PairOptions o = pipeline::pair_options(settings);
  io::Volume f = volume_of<float>(fixed, fixed_geometry, "fixed"), m = volume_of<float>(moving, moving_geometry, "moving");
  at::Tensor a = at::eye(4, at::kDouble);
  if (!affine.is_none()) {
    const auto values = py::cast<py::array_t<double, py::array::c_style | py::array::forcecast>>(affine);
    if (values.size() != 16) throw std::invalid_argument("affine: a 4×4 matrix is needed");
    std::memcpy(a.data_ptr(), values.data(), 16 * sizeof(double));
  }
  py::dict r;
  io::Geometry frame;
  at::Tensor fixed_on_frame, moving_on_frame;
  {
    py::gil_scoped_release release;
    pipeline::PairResult::Intensity how;
    const auto percent = pipeline::normalisation_percentiles(o);
    f.data = pipeline::normalise_intensities(f.data, at::Tensor(), o, percent, &how);
    m.data = pipeline::normalise_intensities(m.data, at::Tensor(), o, percent, &how);
    frame = pipeline::model_frame(f, o.model->info);
    fixed_on_frame = pipeline::on_frame(f, at::eye(4, at::kDouble), frame);
    moving_on_frame = pipeline::on_frame(m, a, frame);
  }
  r["fixed"] = array_of<float>(fixed_on_frame, 0);
  r["moving"] = array_of<float>(moving_on_frame, 0);
  r["frame"] = geometry_dict(frame);
  return r;
}

py::array apply_field(const py::array& moving, const py::dict& moving_geometry, const FloatArray& field,
                      const py::dict& grid_geometry, bool labels) {
  io::Volume v = labels ? volume_of<int32_t>(py::cast<LabelArray>(moving), moving_geometry, "moving")
                           : volume_of<float>(py::cast<FloatArray>(moving), moving_geometry, "moving");
  const io::Geometry grid = geometry_of(grid_geometry, {field.shape(0), field.shape(1), field.shape(2)});
  const at::Tensor u = field_voxels(field, grid);
  at::Tensor warped;
  {
    py::gil_scoped_release release;
    c10::AutoGradMode no_grad(false);
    warped = io::sample_mapped(v, grid, at::Tensor(), u);
  }
  if (labels) return array_of<int32_t>(warped, 2);
  return array_of<float>(warped, 2);
}

py::array_t<double> move_points(const py::array_t<double, py::array::c_style | py::array::forcecast>& points,
                                const FloatArray& field, const py::dict& grid_geometry) {
  const io::Geometry grid = geometry_of(grid_geometry, {field.shape(0), field.shape(1), field.shape(2)});
  const auto moved = io::displace_points(points_of(points), field_voxels(field, grid), grid, "points");
  py::array_t<double> out({py::ssize_t(moved.size()), py::ssize_t(3)});
  for (size_t r = 0; r < moved.size(); ++r) {
    for (int c = 0; c < 3; ++c) out.mutable_at(r, c) = moved[r][c];
  }
  return out;
}

// `autoreg evaluate`'s report (pipeline::evaluate) on arrays, as its JSON text: label
// maps with their geometries, the labels scored, a field with its grid's geometry, point
// sets (N×3, LPS mm); each None where not given.
std::string evaluate_arrays(const py::object& fixed_labels, const py::object& fixed_geometry,
                            const py::object& warped_labels, const py::object& warped_geometry,
                            const std::vector<int64_t>& labels, const py::object& field, const py::object& field_geometry,
                            const py::object& fixed_points, const py::object& moving_points) {
  pipeline::EvaluateInputs in;
  in.labels = labels;
  if (!fixed_labels.is_none() && !warped_labels.is_none()) {
    in.fixed_labels = volume_of<int32_t>(py::cast<LabelArray>(fixed_labels), py::cast<py::dict>(fixed_geometry), "fixed_labels");
    in.warped_labels = volume_of<int32_t>(py::cast<LabelArray>(warped_labels), py::cast<py::dict>(warped_geometry), "warped_labels");
    in.fixed_labels_name = "fixed_labels";
    in.warped_labels_name = "warped_labels";
  }
  if (!field.is_none()) {
    const auto f = py::cast<FloatArray>(field);
    in.field_grid = geometry_of(py::cast<py::dict>(field_geometry), {f.shape(0), f.shape(1), f.shape(2)});
    in.field = field_voxels(f, in.field_grid);
    in.field_name = "field";
  }
  if (!fixed_points.is_none() && !moving_points.is_none()) {
    using Points = py::array_t<double, py::array::c_style | py::array::forcecast>;
    in.fixed_points = points_of(py::cast<Points>(fixed_points));
    in.moving_points = points_of(py::cast<Points>(moving_points));
    in.points_name = "fixed_points";
  }
  return pipeline::evaluate(in).dump();
}

// `autoreg pack`'s job: a manifest preprocessed into one training set file, its keywords
// read through the job's rows (pipeline::pack_schema(), as `autoreg pack` reads its options).
py::dict pack(const std::string& manifest, const std::string& out, const py::dict& settings) {
  pipeline::PackJob job;
  job.manifest = manifest;
  job.out = out;
  set_through_rows(pipeline::pack_schema(), settings, job);
  const pipeline::PackResult r = pipeline::pack(job);
  py::dict d;
  d["train"] = r.train;
  d["validation"] = r.validation;
  d["atlas"] = r.atlas;
  d["grid"] = py::make_tuple(r.grid[0], r.grid[1], r.grid[2]);
  d["spacing"] = r.spacing;
  d["bytes"] = r.bytes;
  return d;
}

uint64_t fnv1a(const py::bytes& data, uint64_t h) {
  const std::string_view s = data;
  for (const char c : s) {
    h ^= uint8_t(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace
}  // namespace autoreg::python

PYBIND11_MODULE(_autoreg, m) {
  namespace py = pybind11;
  using namespace autoreg::python;
  m.doc() = "autoreg's C++ library on numpy arrays (use the autoreg package's functions)";
  // As the command line does (apps/main.cpp): freed memory stays in the process, so that
  // large tensors are not mapped and unmapped on every operation (without it a brain
  // pair's instance optimisation took 2.8-3.1 s here against the command's 2.5 s; with
  // it 2.1-2.3 s). AUTOREG_KEEP_MALLOC=1 leaves the process's settings alone.
  const char* keep = std::getenv("AUTOREG_KEEP_MALLOC");
  if (!keep || std::string(keep) != "1") {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  static py::exception<std::runtime_error> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<std::runtime_error> settings_error(m, "SettingsError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const autoreg::io::IoError& e) {
      py::set_error(input_error, e.what());
    } catch (const autoreg::rt::DicomError& e) {
      py::set_error(input_error, e.what());
    } catch (const autoreg::registration::ModelFileError& e) {
      py::set_error(input_error, e.what());
    } catch (const autoreg::pipeline::NoDefaultModel& e) {
      py::set_error(input_error, e.what());
    } catch (const autoreg::base::UsageError& e) {
      py::set_error(settings_error, e.what());
    } catch (const c10::Error& e) {
      py::set_error(PyExc_RuntimeError, e.what_without_backtrace());
    }
  });
  m.def("register_arrays", &register_arrays);
  m.def("network_forward", &network_forward);
  m.def("model_inputs", &model_inputs);
  m.def("apply_field", &apply_field);
  m.def("move_points", &move_points);
  m.def("evaluate_arrays", &evaluate_arrays);
  m.def("pack", &pack);
  add_contours(m);
  // The settings table (registration_settings.h) and what keywords make of it, for the
  // test that walks every row through the command line, Python and the ITK filter.
  m.def("settings_table",
        [] { return rows_of(autoreg::pipeline::setting_rows(), autoreg::pipeline::RegistrationSettings{}); });
  m.def("settings_text", [](const py::dict& kw) {
    const autoreg::pipeline::RegistrationSettings s = settings_of(kw);
    py::dict d;
    for (const auto& r : autoreg::pipeline::setting_rows()) d[py::str(r.keyword)] = r.get(s);
    return d;
  });
  // A job's rows (keyword, option, default, help) for its function's docstring.
  m.def("pack_rows", [] { return rows_of(autoreg::pipeline::pack_schema(), autoreg::pipeline::PackJob{}); });
  m.def("fnv1a", &fnv1a);
  m.def("presets", [] {
    py::dict d;
    for (const auto& p : autoreg::pipeline::presets()) d[py::str(p.name)] = p.purpose;
    return d;
  });
  m.def("default_model_path", &autoreg::pipeline::default_model_path);
}
