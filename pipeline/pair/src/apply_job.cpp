#include "autoreg/pair/apply_job.h"

#include <ATen/ATen.h>

#include <filesystem>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "autoreg/pair/contours_job.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/pair/register_job.h"
#include "autoreg/pair/qc_picture.h"

namespace autoreg::pipeline {
namespace {

// True for the names of affine transform files (.tfm, .txt, .mat).
bool is_affine_file(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".tfm" || ext == ".txt" || ext == ".mat";
}

}  // namespace

void apply_files(const ApplyJob& p) {
  io::check_output(p.out);
  if (!p.qc.empty()) io::check_output(p.qc);
  const bool affine_file = is_affine_file(p.field);
  if (p.reference.empty() && affine_file) {
    throw io::IoError(p.field + ": an affine transform carries no output grid: give the fixed image as --reference");
  }
  io::Volume reference;
  if (!p.qc.empty()) reference = io::read_volume(p.reference);
  io::Geometry grid;  // without --reference: the field's own grid (the fixed image's, as register wrote it)
  if (!p.reference.empty()) grid = p.qc.empty() ? io::read_geometry(p.reference) : reference.geometry;
  at::Tensor affine, u;
  if (affine_file) {
    affine = io::read_affine(p.field);
  } else {
    io::Geometry field_grid;
    u = io::read_displacement_field(p.field, &field_grid);
    if (p.reference.empty()) {
      grid = field_grid;
    } else if (!io::same_grid(grid, field_grid)) {
      throw io::IoError(p.field + ": the field's grid differs from the reference image's (" + p.reference +
                        "); the field must live on the fixed (reference) grid");
    }
  }
  io::Volume moving = io::read_volume(p.moving, p.labels ? io::PixelKind::Labels : io::PixelKind::Intensity);
  if (!p.moving_orientation.empty()) moving.geometry = io::with_orientation(moving.geometry, p.moving_orientation);
  const io::Volume warped{io::sample_mapped(moving, grid, affine, u), grid};
  io::write_volume(p.out, warped);
  if (!p.qc.empty()) {
    // A label map is outlined on the reference; an image is shown beside it.
    write_qc_picture(p.qc, {reference.data, warped.data, p.labels ? warped.data : at::Tensor(), u, grid,
                            "autoreg apply: " + file_stem(p.moving) + " onto " + file_stem(p.reference),
                            file_stem(p.moving) + " through " + file_stem(p.field) + " onto " + file_stem(p.reference)});
  }
}

void apply_points_files(const ApplyPointsJob& p) {
  io::check_output(p.out);
  io::point_format_of(p.out);  // a name that says a format, before any work
  io::PointSet points = io::read_points(p.points, p.point_options);
  if (is_affine_file(p.field)) {
    points.points = io::affine_points(points.points, io::read_affine(p.field));
  } else {
    io::Geometry grid;
    const at::Tensor u = io::read_displacement_field(p.field, &grid);
    points.points = io::displace_points(points.points, u, grid, p.points);
  }
  io::write_points(p.out, points);
}

nlohmann::json apply_contours_files(const ApplyContoursJob& p) {
  io::check_output(p.out);
  const io::Geometry moving_grid = io::read_geometry(p.moving), fixed_grid = io::read_geometry(p.reference);
  at::Tensor u;  // the whole map on the reference grid, in its voxels
  if (is_affine_file(p.field)) {
    u = io::compose_affine(fixed_grid, io::read_affine(p.field), at::Tensor());
  } else {
    io::Geometry field_grid;
    u = io::read_displacement_field(p.field, &field_grid);
    if (!io::same_grid(fixed_grid, field_grid)) {
      throw io::IoError(p.field + ": the field's grid differs from the reference series' (" + p.reference +
                        "); the field must live on the series the structures are carried onto");
    }
  }
  RegisterJob job;  // the pair's contours, as register reads them
  job.moving = p.moving;
  job.fixed = p.reference;
  job.moving_contours = p.contours;
  job.fixed_contours = p.fixed_contours;
  job.out_contours = p.out;
  const PairContours contours = read_pair_contours(job, moving_grid, fixed_grid);
  const CarriedContours carried = carry_contours(contours, moving_grid, fixed_grid, u);
  write_carried_contours(p.out, contours, carried);
  nlohmann::json summary = {{"moving", p.contours}, {"structures", carried.summary}, {"written", p.out}};
  if (!p.fixed_contours.empty()) summary["fixed"] = p.fixed_contours;
  return summary;
}

}  // namespace autoreg::pipeline
