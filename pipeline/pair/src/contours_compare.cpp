// Two structure sets of one series compared structure by structure (contours_job.h:
// compare_structure_sets, `autoreg evaluate --fixed-contours`).
#include <ATen/ATen.h>

#include <cmath>

#include "autoreg/io/volume.h"
#include "autoreg/pair/contours_job.h"
#include "autoreg/pair/pair_checks.h"
#include "autoreg/registration/metrics.h"
#include "autoreg/rt/errors.h"
#include "autoreg/rt/rasterise.h"

namespace autoreg::pipeline {
namespace {

// A structure filled on the series' grid as a 1×1×D×H×W label map (1 inside).
at::Tensor filled(const rt::Roi& roi, const rt::Grid& grid, const std::string& file) {
  std::vector<uint8_t> mask = rt::rasterise(roi, grid, file).mask;
  const auto& n = grid.size;
  return at::from_blob(mask.data(), {1, 1, n[2], n[1], n[0]}, at::kByte).to(at::kInt);
}

nlohmann::json compare(const std::string& fixed_file, const std::string& warped_file, const std::string& folder) {
  const rt::DicomSeries series =
      read_series_folder(folder, "--series is the DICOM series folder both structure sets are drawn on");
  const rt::StructureSet fixed = read_structure_set_on(fixed_file, series, folder);
  const rt::StructureSet warped = read_structure_set_on(warped_file, series, folder);
  const std::array<double, 3> spacing_dhw{series.grid.spacing[2], series.grid.spacing[1], series.grid.spacing[0]};
  const double voxel_ml = series.grid.spacing[0] * series.grid.spacing[1] * series.grid.spacing[2] / 1000.0;
  nlohmann::json out = {{"structures", nlohmann::json::array()}};
  double dice_sum = 0, hd_sum = 0;
  int scored = 0, hd_count = 0;
  for (const rt::Roi& roi : warped.rois) {
    if (roi.contours.empty()) continue;
    const at::Tensor mask = filled(roi, series.grid, warped_file);
    nlohmann::json s = {{"number", roi.number}, {"name", roi.name}, {"volume_ml", mask.sum().item<double>() * voxel_ml}};
    const int match = matching_structure(roi.name, fixed.rois);
    if (match < 0) {
      s["compared_with"] = nullptr;
    } else {
      const rt::Roi& ref = fixed.rois[size_t(match)];
      const at::Tensor reference = filled(ref, series.grid, fixed_file);
      const double d = registration::dice(reference, mask, 1), h = registration::hd95(reference, mask, 1, spacing_dhw);
      s["compared_with"] = ref.name;
      s["reference_volume_ml"] = reference.sum().item<double>() * voxel_ml;
      s["dice"] = d;
      s["hd95_mm"] = finite_or_null(h);
      dice_sum += d;
      ++scored;
      if (std::isfinite(h)) hd_sum += h, ++hd_count;
    }
    out["structures"].push_back(std::move(s));
  }
  out["mean_dice"] = scored ? nlohmann::json(dice_sum / scored) : nlohmann::json(nullptr);
  out["mean_hd95_mm"] = hd_count ? nlohmann::json(hd_sum / hd_count) : nlohmann::json(nullptr);
  out["fixed"] = fixed_file;
  out["warped"] = warped_file;
  return out;
}

}  // namespace

nlohmann::json compare_structure_sets(const std::string& fixed_file, const std::string& warped_file,
                                      const std::string& series_folder) {
  try {
    return compare(fixed_file, warped_file, series_folder);
  } catch (const rt::DicomError& e) {
    throw io::IoError(e.what());  // bad input, as every reader's
  }
}

}  // namespace autoreg::pipeline
