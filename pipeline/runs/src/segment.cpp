#include "autoreg/runs/segment.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "autoreg/base/stopwatch.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/registration/metrics.h"

namespace autoreg::pipeline {

namespace {

std::string describe(const io::Geometry& g) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%ld×%ld×%ld voxels of %.3g×%.3g×%.3g mm", long(g.size[0]), long(g.size[1]),
                long(g.size[2]), g.spacing[0], g.spacing[1], g.spacing[2]);
  return buf;
}

}  // namespace

Segmentation segment(const io::Volume& target, const std::vector<AtlasFiles>& atlases, const SegmentOptions& o) {
  if (atlases.empty()) throw std::invalid_argument("no atlases to segment with");
  Segmentation s;
  // Intensities compared by the fusion: each image normalised like the registration's
  // input (percentiles), then warped.
  const at::Tensor target_normalised = io::normalize_intensity(target.data);
  for (size_t i = 0; i < atlases.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    const AtlasFiles& a = atlases[i];
    const io::Volume image = io::read_volume(a.image);
    const io::Volume labels = io::read_volume(a.labels, io::PixelKind::Labels);
    if (!io::same_grid(labels.geometry, image.geometry)) {
      throw io::IoError(a.labels + ": not on the grid of its atlas image " + a.image + " (" +
                        describe(labels.geometry) + " against " + describe(image.geometry) + ")");
    }
    AtlasReport report;
    io::Volume warped, warped_labels;
    PairResult r;
    if (o.registered) {
      if (!io::same_grid(image.geometry, target.geometry)) {
        throw io::IoError(a.image + ": not on the target's grid (" + describe(image.geometry) + " against " +
                          describe(target.geometry) + "); without --registered the atlases are registered first");
      }
      warped = {io::normalize_intensity(image.data), target.geometry};
      warped_labels = labels;
    } else {
      r = register_pair({target.data, target.geometry}, image, o.pair);
      c10::AutoGradMode no_grad(false);
      const io::Volume normalised{io::normalize_intensity(image.data), image.geometry};
      warped = {io::sample_mapped(normalised, target.geometry, at::Tensor(), r.displacement), target.geometry};
      warped_labels = {io::sample_mapped(labels, target.geometry, at::Tensor(), r.displacement), target.geometry};
      report.folding_percent = registration::jacobian_stats(r.displacement).non_positive_percent;
    }
    if (o.on_atlas) o.on_atlas(i, warped, warped_labels, o.registered ? nullptr : &r, image.geometry);
    s.atlases.images.push_back(warped.data[0][0]);
    s.atlases.labels.push_back(warped_labels.data[0][0]);
    report.seconds = base::seconds_since(start);
    s.reports.push_back(report);
    if (o.log) {
      char line[512];
      std::snprintf(line, sizeof line, "atlas %zu/%zu %s: %s in %.1f s", i + 1, atlases.size(), a.image.c_str(),
                    o.registered ? "read" : "registered", report.seconds);
      o.log(line);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  s.fused = segmentation::fuse(target_normalised[0][0], s.atlases, o.fusion);
  s.fusion_seconds = base::seconds_since(start);
  s.labels = {s.fused.labels.unsqueeze(0).unsqueeze(0), target.geometry};
  if (o.log) {
    char line[256];
    std::snprintf(line, sizeof line, "fused %zu atlases (%s) in %.1f s; they agree on %.1f %% of voxels", atlases.size(),
                  segmentation::to_string(o.fusion.method).c_str(), s.fusion_seconds,
                  100.0 * double(s.fused.unanimous) / double(std::max<int64_t>(1, s.fused.labels.numel())));
    o.log(line);
  }
  return s;
}

}  // namespace autoreg::pipeline
