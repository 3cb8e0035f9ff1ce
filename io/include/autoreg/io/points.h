// Point sets (landmarks, fiducials) in the files users have, and their motion through a
// displacement field. In memory a point is in ITK's physical frame: LPS millimetres, the
// frame of our fields and of every image header ITK reads. Each format's convention:
//
// | format | extension | coordinates as stored |
// |---|---|---|
// | CSV, as ANTs' antsApplyTransformsToPoints | .csv | header x,y,z[,t,label,…]; LPS mm |
// | elastix/transformix input points | .txt, .pts (first line `point` or `index`) | `point`: LPS mm; `index`: 0-based voxel indices of an image |
// | VTK legacy POLYDATA | .vtk | LPS mm (as ITK and the ETH liver set write them) |
// | 3D Slicer markups, legacy | .fcsv | RAS mm (`# CoordinateSystem = RAS` or `0`; `LPS` or `1` read too) |
// | 3D Slicer markups, JSON | .mrk.json | `coordinateSystem` RAS or LPS; written RAS |
// | voxel-index list | .txt, .pts without a header | i j k per row, 0- or 1-based as stated (DIR-Lab: 1-based) |
//
// RAS is LPS with x and y negated. Indices become points through an image's geometry
// (origin + direction · diag(spacing) · index). Columns beyond the coordinates (a CSV's
// t and label, a markup's label and description) are kept with each point and written
// back where the format has room for them; order is always kept.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/io/volume.h"

namespace autoreg::io {

enum class PointFormat { Csv, Elastix, Vtk, Fcsv, MarkupsJson, VoxelIndex };

const char* to_string(PointFormat f);

struct PointSet {
  std::vector<std::array<double, 3>> points;  // LPS mm
  // Per point, the columns that follow the coordinates (CSV: t, label, …; Slicer: label,
  // description), as text; names in `columns` (a CSV's header after x,y,z).
  std::vector<std::vector<std::string>> extra;
  std::vector<std::string> columns;
};

struct PointFileOptions {
  // Voxel indices (elastix `index` files, voxel-index lists) are of this image's grid.
  std::optional<Geometry> grid;
  // A voxel-index list's first index: 0 or 1. Required for such a list (no default: a
  // wrong guess moves every point by a voxel).
  std::optional<int> index_base;
};

// The format a path's name says (.csv, .vtk, .fcsv, .mrk.json; .txt and .pts are elastix
// files or voxel-index lists, told apart by their first line when read).
PointFormat point_format_of(const std::string& path);

// Reads a point file; IoError naming the file and the row for a malformed row, a count
// that does not match the rows, a non-finite coordinate, or indices without a grid.
PointSet read_points(const std::string& path, const PointFileOptions& options = {});

// Writes `points` atomically in the format the name says (a voxel-index list or an elastix
// `index` file only with options.grid; indices are written as continuous values).
void write_points(const std::string& path, const PointSet& points, const PointFileOptions& options = {});

// Each point moved through a displacement field given in voxels of `grid` (as
// read_displacement_field returns it): x + d(x), d interpolated trilinearly (sample_at)
// and turned into LPS mm. A point outside the grid (beyond half a voxel of its edge)
// throws IoError naming `what` and the point's row.
std::vector<std::array<double, 3>> displace_points(const std::vector<std::array<double, 3>>& points,
                                                   const at::Tensor& voxels, const Geometry& grid,
                                                   const std::string& what);

// Each point mapped by a 4×4 affine (LPS mm, as read_affine gives it): A·x.
std::vector<std::array<double, 3>> affine_points(const std::vector<std::array<double, 3>>& points,
                                                 const at::Tensor& affine);

// Landmarks of two images: the same points in the same order in each file (IoError
// naming the files when their counts differ).
struct Landmarks {
  PointSet fixed, moving;
};
Landmarks read_landmarks(const std::string& fixed, const std::string& moving, const PointFileOptions& options = {});

// Target registration error: the distance (mm) between each moved point and its match.
struct PointErrors {
  std::vector<double> distances;  // per point, in order
  double mean = 0, median = 0, p95 = 0, max = 0;
};
PointErrors point_errors(const std::vector<std::array<double, 3>>& moved,
                         const std::vector<std::array<double, 3>>& targets);

}  // namespace autoreg::io
