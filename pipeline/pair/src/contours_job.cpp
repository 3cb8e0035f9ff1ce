#include "autoreg/pair/contours_job.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>

#include "autoreg/base/atomic_file.h"
#include "autoreg/base/csv.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/mapped.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/pair/register_job.h"
#include "autoreg/rt/contours.h"
#include "autoreg/rt/errors.h"
#include "autoreg/rt/image_series.h"
#include "autoreg/rt/rasterise.h"
#include "autoreg/rt/write.h"
#include "carried_mask.h"

namespace autoreg::pipeline {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// The name but for its last `_` part ("" where it has none).
std::string stem(const std::string& name) {
  const auto cut = name.rfind('_');
  return cut == std::string::npos || cut == 0 ? "" : name.substr(0, cut);
}

io::Geometry geometry_of(const rt::Grid& grid) {
  io::Geometry g;
  g.size = grid.size;
  g.spacing = grid.spacing;
  g.origin = grid.origin;
  g.direction = grid.direction;
  return g;
}

// The series of `image` (a DICOM folder) for `file` (a structure set drawn on it, or an
// output written on it: `what` says which), on the grid the image was read on.
rt::DicomSeries series_for(const std::string& file, const std::string& what, const std::string& image,
                           const io::Geometry& grid) {
  if (!std::filesystem::is_directory(image)) {
    throw io::IoError(file + ": " + what + " a DICOM series; give its series folder as the image (" + image + " is a file)");
  }
  rt::DicomSeries series = rt::read_series(image);
  if (!io::same_grid(geometry_of(series.grid), grid, 1e-3)) {
    throw io::IoError(image + ": the DICOM series' slices do not make the grid its image was read on; " + file +
                      " cannot be placed on it");
  }
  return series;
}

constexpr const char* kDrawnOn = "an RT Structure Set is drawn on";
constexpr const char* kWrittenOn = "a DICOM output is written on";
constexpr const char* kCarriedOnto = "an RT Structure Set is carried onto";

double voxel_ml(const io::Geometry& g) { return g.spacing[0] * g.spacing[1] * g.spacing[2] / 1000.0; }

// The Dice of two masks of one grid, in one pass; NaN when both are empty.
double dice(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int64_t both = 0, total = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int x = a[i] != 0, y = b[i] != 0;
    both += x & y;
    total += x + y;
  }
  return total == 0 ? std::nan("") : 2.0 * double(both) / double(total);
}

// One structure carried: its mask drawn on the moving grid, sampled through the map onto
// the fixed grid (a share in 0..1 per voxel) and contoured at one half on every slice.
struct Carried {
  rt::Roi roi;
  std::vector<uint8_t> sampled_half;  // the sampled share ≥ 0.5: the label-map path
  std::vector<uint8_t> as_drawn;      // with `before`: the mask on the fixed grid unmoved
  double drawn_ml = 0, carried_ml = 0;
  int64_t on_border = 0;  // voxels of the fixed grid's outermost layer inside: cut by its edge
};

// Each structure is carried within the box of fixed voxels that can reach it (the field
// moves no voxel farther than `reach` along each axis), not on the whole grid: a second a
// structure on a 512×512×105 CBCT, against a tenth.
Carried carry(const rt::Roi& roi, const PairContours& pair, const io::Geometry& moving_grid,
              const io::Geometry& fixed_grid, const at::Tensor& displacement, const std::array<double, 3>& reach,
              bool before) {
  Carried c;
  c.roi = roi;
  c.roi.contours.clear();
  std::vector<uint8_t> drawn = rt::rasterise(roi, pair.moving_series.grid, pair.moving_file).mask;
  const detail::MovingBox part = detail::moving_box(drawn, moving_grid);
  c.drawn_ml = double(part.voxels) * voxel_ml(moving_grid);
  if (part.box.empty()) {  // no contour on the moving grid's slices
    c.sampled_half.assign(size_t(fixed_grid.size[0] * fixed_grid.size[1] * fixed_grid.size[2]), 0);
    c.as_drawn = c.sampled_half;
    return c;
  }
  const detail::OnBox share = detail::sampled_on_box(part, pair.moving_series.grid, pair.fixed_series.grid, fixed_grid,
                                                     reach, displacement);
  c.carried_ml = share.values.sum().item<double>() * voxel_ml(fixed_grid);
  c.sampled_half = detail::half_on_grid(share, fixed_grid);
  // Before registration: the mask as drawn, carried by the headers alone (the fixed series'
  // slices need not lie on the moving series' planes, so it is sampled, not filled again).
  if (before) {
    c.as_drawn = detail::half_on_grid(
        detail::sampled_on_box(part, pair.moving_series.grid, pair.fixed_series.grid, fixed_grid, {0, 0, 0}, at::Tensor()),
        fixed_grid);
  }
  if (share.box.empty()) return c;  // mapped wholly outside the fixed image: no contour
  const rt::DicomSeries on = detail::cropped_series(pair.fixed_series, share.box);
  c.roi.contours = rt::contours_from_volume(share.values.data_ptr<float>(), on, 0.5);
  // The box's outer layer is empty but where it is the grid's own edge.
  c.on_border = rt::voxels_on_border(share.values.data_ptr<float>(), on.grid, 0.5);
  return c;
}

// The series first: an image given as a file is the likelier mistake than a bad file.
PairContours read_contours(const RegisterJob& job, const io::Geometry& moving_grid, const io::Geometry& fixed_grid) {
  PairContours c;
  c.moving_file = job.moving_contours;
  c.fixed_file = job.fixed_contours;
  if (!c.moving_file.empty()) {
    c.moving_series = series_for(c.moving_file, kDrawnOn, job.moving, moving_grid);
    c.moving = read_structure_set_on(c.moving_file, c.moving_series, job.moving);
  }
  if (!c.fixed_file.empty()) {
    c.fixed_series = series_for(c.fixed_file, kDrawnOn, job.fixed, fixed_grid);
  } else if (!c.moving_file.empty()) {  // the structures are contoured on its slices
    c.fixed_series = series_for(c.moving_file, kCarriedOnto, job.fixed, fixed_grid);
  } else if (names_dicom_folder(job.out_warped)) {
    c.fixed_series = series_for(job.out_warped, kWrittenOn, job.fixed, fixed_grid);
  }
  if (!c.fixed_file.empty()) {
    c.fixed = read_structure_set_on(c.fixed_file, c.fixed_series, job.fixed);
  }
  return c;
}

// The carried structures as one label map (each its ROI number), the larger first, so a
// structure inside another (an organ inside the body's outline) keeps its voxels.
at::Tensor label_map(std::vector<std::pair<double, Carried>>& carried, const io::Geometry& grid) {
  std::sort(carried.begin(), carried.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const auto& n = grid.size;
  at::Tensor labels = at::zeros({1, 1, n[2], n[1], n[0]}, at::kInt);
  int32_t* l = labels.data_ptr<int32_t>();
  for (const auto& [volume, one] : carried) {
    for (size_t v = 0; v < one.sampled_half.size(); ++v) {
      if (one.sampled_half[v]) l[v] = one.roi.number;
    }
  }
  return labels;
}

// A whole number in 0..most from a label table's field; io::IoError naming the place.
int table_number(const std::string& text, int least, int most, const std::string& where) {
  size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < least || value > most) {
    throw io::IoError(where + ": '" + text + "' is not a whole number in " + std::to_string(least) + "-" +
                      std::to_string(most));
  }
  return value;
}

}  // namespace

rt::DicomSeries read_series_folder(const std::string& folder, const std::string& why) {
  if (!std::filesystem::is_directory(folder)) throw io::IoError(folder + ": " + why);
  return rt::read_series(folder);
}

rt::StructureSet read_structure_set_on(const std::string& file, const rt::DicomSeries& series, const std::string& folder) {
  rt::StructureSet s = rt::read_structure_set(file);
  rt::check_references(s, series, file, folder);
  return s;
}

rt::DicomSeries series_of_image(const std::string& folder, const io::Geometry& grid, const std::string& file) {
  try {
    return series_for(file, "a structure set is written on", folder, grid);
  } catch (const rt::DicomError& e) {
    throw io::IoError(e.what());
  }
}

int write_structure_masks(const std::string& path, std::vector<StructureMask> structures, const rt::DicomSeries& series,
                          const std::string& description) {
  const auto& n = series.grid.size;
  const size_t voxels = size_t(n[0] * n[1] * n[2]);
  std::vector<rt::Roi> rois;
  for (StructureMask& s : structures) {
    if (s.mask.size() != voxels) {
      throw io::IoError(path + ": the mask of structure " + s.roi.name + " is not on the grid of " + series.folder);
    }
    std::vector<float> values(s.mask.begin(), s.mask.end());
    s.roi.contours = rt::contours_from_volume(values.data(), series, 0.5);
    rois.push_back(std::move(s.roi));
  }
  rt::WriteInfo info;
  info.description = description;
  try {
    return rt::write_structure_set(path, rois, series, info).contours;
  } catch (const std::invalid_argument& e) {
    throw io::IoError(path + ": " + e.what());
  }
}

std::vector<rt::Roi> read_label_table(const std::string& path) {
  std::vector<rt::Roi> rois;
  for (const io::CsvRow& row : io::read_csv(path, {"label", "name", "red", "green", "blue"}, {"label", "name"}, "label table")) {
    const std::string where = path + ":" + std::to_string(row.line);
    rt::Roi roi;
    roi.number = table_number(row.fields[0], 1, std::numeric_limits<int>::max(), where);
    roi.name = row.fields[1];
    if (roi.name.empty()) throw io::IoError(where + ": label " + row.fields[0] + " has no name");
    for (int c = 0; c < 3; ++c) {
      if (!row.fields[2 + size_t(c)].empty()) roi.color[size_t(c)] = table_number(row.fields[2 + size_t(c)], 0, 255, where);
    }
    rois.push_back(std::move(roi));
  }
  return rois;
}

bool names_dicom_folder(const std::string& path) { return !path.empty() && path.back() == '/'; }

void check_dicom_output(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target = fs::path(folder).lexically_normal();
  const fs::path dir = target.has_filename() ? target : target.parent_path();
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec))) {
    throw io::IoError(folder + ": a DICOM series is written into a new or empty folder; this one holds files");
  }
  const fs::path parent = dir.parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) throw io::IoError(folder + ": output folder does not exist");
}

void write_warped_series(const std::string& folder, const io::Volume& warped, const PairContours& c,
                         const std::string& moving) {
  rt::ImageSeriesInfo info;
  info.series_description = "autoreg: " + std::filesystem::path(moving).lexically_normal().filename().string() +
                            " deformed onto this scan";
  info.derivation_description = "The image " + moving + " deformed onto the series " + c.fixed_series.folder +
                                " by autoreg register (its frame of reference and geometry).";
  if (c.moving_series.series_uid.size()) info.source_series_uid = c.moving_series.series_uid;
  const at::Tensor values = warped.data.to(at::kFloat).contiguous();
  rt::write_image_series(folder, values.data_ptr<float>(), c.fixed_series, info);
}

int matching_structure(const std::string& name, const std::vector<rt::Roi>& candidates) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (lower(candidates[i].name) == lower(name)) return int(i);
  }
  const std::string s = lower(stem(name));
  if (s.empty()) return -1;
  int found = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (lower(stem(candidates[i].name)) != s) continue;
    if (found >= 0) return -1;
    found = int(i);
  }
  return found;
}

PairContours read_pair_contours(const RegisterJob& job, const io::Geometry& moving_grid, const io::Geometry& fixed_grid) {
  try {
    return read_contours(job, moving_grid, fixed_grid);
  } catch (const rt::DicomError& e) {
    throw io::IoError(e.what());  // bad input, as every reader's
  }
}

CarriedContours carry_contours(const PairContours& c, const io::Geometry& moving_grid, const io::Geometry& fixed_grid,
                               const at::Tensor& displacement, bool labels) {
  c10::AutoGradMode no_grad(false);
  CarriedContours out;
  std::vector<std::pair<double, Carried>> painted;  // with `labels`: each structure by its volume
  out.summary = nlohmann::json::array();
  // How far the field moves a voxel at most along i, j, k (its channels are k, j, i).
  const at::Tensor most = displacement.abs().amax({0, 2, 3, 4}).to(at::kDouble).contiguous();
  const std::array<double, 3> reach{most.data_ptr<double>()[2], most.data_ptr<double>()[1], most.data_ptr<double>()[0]};
  for (const rt::Roi& roi : c.moving.rois) {
    if (roi.contours.empty()) continue;
    const int match = matching_structure(roi.name, c.fixed.rois);
    Carried one = carry(roi, c, moving_grid, fixed_grid, displacement, reach, match >= 0);
    nlohmann::json s = {{"number", roi.number},
                        {"name", roi.name},
                        {"volume_drawn_ml", one.drawn_ml},
                        {"volume_carried_ml", one.carried_ml},
                        // The share of the volume lost on the way (what left the fixed image's
                        // field of view, and the field's change of volume), and whether the
                        // fixed image's edge cuts it.
                        {"volume_lost", one.drawn_ml > 0 ? std::max(0.0, 1 - one.carried_ml / one.drawn_ml) : 0.0},
                        {"cut_by_edge", one.on_border > 0},
                        {"contours", one.roi.contours.size()}};
    if (match >= 0) {
      const std::vector<uint8_t> reference = rt::rasterise(c.fixed.rois[size_t(match)], c.fixed_series.grid, c.fixed_file).mask;
      s["compared_with"] = c.fixed.rois[size_t(match)].name;
      // Before registration, where both series share a frame of reference (else the
      // headers' alignment means nothing).
      if (c.moving_series.frame_of_reference_uid == c.fixed_series.frame_of_reference_uid) {
        s["dice_before"] = dice(one.as_drawn, reference);
      }
      s["dice"] = dice(rt::rasterise(one.roi, c.fixed_series.grid).mask, reference);
      s["dice_label_map"] = dice(one.sampled_half, reference);
    }
    out.summary.push_back(std::move(s));
    out.rois.push_back(one.roi);
    if (labels) painted.emplace_back(one.carried_ml, std::move(one));
  }
  if (labels) out.labels = label_map(painted, fixed_grid);
  return out;
}

std::string label_table_path(const std::string& labels) {
  return (std::filesystem::path(labels).parent_path() / (file_stem(labels) + ".csv")).string();
}

void write_label_table(const std::string& path, const CarriedContours& carried) {
  std::string text = "label,name,red,green,blue\n";
  for (const rt::Roi& roi : carried.rois) {
    text += std::to_string(roi.number) + "," + base::csv_field(roi.name) + "," + std::to_string(roi.color[0]) + "," +
            std::to_string(roi.color[1]) + "," + std::to_string(roi.color[2]) + "\n";
  }
  base::write_file_atomically(path, text);
}

void write_carried_contours(const std::string& path, const PairContours& c, const CarriedContours& carried) {
  rt::WriteInfo info;
  info.source_sop_instance_uid = c.moving.sop_instance_uid;
  info.source_label = c.moving.label;
  info.description = "Carried by autoreg (a deformable registration) from " + std::filesystem::path(c.moving_file).filename().string() +
                     " (" + c.moving_series.folder + ") onto " + c.fixed_series.folder + ".";
  rt::write_structure_set(path, carried.rois, c.fixed_series, info);
}

}  // namespace autoreg::pipeline
