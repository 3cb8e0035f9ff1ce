#include "autoreg/pair/preset_choice.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autoreg/io/grid.h"

namespace autoreg::pipeline {

namespace {

// Hounsfield-like: air at or below this (the 0.5th percentile), as the CT window's rule.
constexpr double kHounsfieldAir = -500;
// A cone-beam CT's soft tissue (the median of what lies in (−400, 400), fat included) lies
// this far or more from water's 0 HU, where a CT's does not: the planning CT's at −3,
// CBCT02's at −154. Its field of view: padding on at least this fraction of the grid,
// above a CT's reconstruction-circle values (−2048, −3024).
constexpr double kSoftTissueHu = 0, kConeBeamOffset = 100, kConeBeamOutside = 0.05, kReconstructionPadding = -1500;
// Thick slices (an abdominal MR's 4-6 mm, not a brain's 1 mm), and how much of the grid's
// sides a trunk covers (cut by them): the liver frames 0.19-0.23, the heads here 0-0.04
// (the OASIS brains, the T1/T2 pair's T2 with its skull, the sample pair).
constexpr double kThickSliceMm = 3, kTrunkSides = 0.1;
// One frame of reference: the two world boxes share this much of the smaller one.
constexpr double kSameFrameOverlap = 0.5;

// Every second voxel along each axis: the evidence is statistics, not detail.
at::Tensor subsampled(const at::Tensor& data) {
  return data.slice(2, 0, at::indexing::None, 2).slice(3, 0, at::indexing::None, 2).slice(4, 0, at::indexing::None, 2)
      .to(at::kFloat).contiguous();
}

// The fraction of the faces along the slices (tensor axes other than the thickest; all
// of them for near-isotropic voxels) where `body` is set.
double sides_covered(const at::Tensor& body, const std::array<double, 3>& spacing) {
  // spacing along i, j, k is tensor dimension 4, 3, 2.
  const auto [lo, hi] = std::minmax_element(spacing.begin(), spacing.end());
  const int thick = *hi >= 1.5 * *lo ? int(hi - spacing.begin()) : -1;
  double covered = 0, total = 0;
  for (int axis = 0; axis < 3; ++axis) {
    if (axis == thick) continue;
    const int64_t dim = 4 - axis, n = body.size(dim);
    for (int64_t index : {int64_t(0), n - 1}) {
      const at::Tensor face = body.select(dim, index);
      covered += face.sum().item<double>();
      total += double(face.numel());
    }
  }
  return total > 0 ? covered / total : 0;
}

double box_overlap(const io::Geometry& a, const io::Geometry& b) {
  // The world boxes' corners (voxel centres ± half a voxel), axis-aligned in LPS.
  const auto box = [](const io::Geometry& g) {
    std::array<double, 3> lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
    for (int corner = 0; corner < 8; ++corner) {
      for (int r = 0; r < 3; ++r) {
        double x = g.origin[r];
        for (int c = 0; c < 3; ++c) {
          const double index = (corner >> c & 1) ? double(g.size[c]) - 0.5 : -0.5;
          x += g.direction[r * 3 + c] * g.spacing[c] * index;
        }
        lo[r] = std::min(lo[r], x);
        hi[r] = std::max(hi[r], x);
      }
    }
    return std::make_pair(lo, hi);
  };
  const auto [alo, ahi] = box(a);
  const auto [blo, bhi] = box(b);
  double shared = 1, va = 1, vb = 1;
  for (int r = 0; r < 3; ++r) {
    shared *= std::max(0.0, std::min(ahi[r], bhi[r]) - std::max(alo[r], blo[r]));
    va *= ahi[r] - alo[r];
    vb *= bhi[r] - blo[r];
  }
  return shared / std::max(1e-9, std::min(va, vb));
}

std::string number(double v, const char* format = "%.0f") {
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

std::string describe(const ScanEvidence& e) {
  std::string text = e.kind == "ct" ? "a CT" : e.kind == "cbct" ? "a cone-beam CT" : "an MR (or other non-HU scan)";
  if (e.soft_tissue) text += ", soft tissue at " + number(*e.soft_tissue) + " HU";
  if (e.padding) text += ", " + number(100 * e.outside_fraction) + " % outside its field of view (padding " + number(*e.padding) + ")";
  if (e.kind == "mr") {
    text += ", slices of " + number(e.slice_mm, "%.1f") + " mm, " + number(100 * e.sides_covered) + " % of its sides covered";
  }
  return text;
}

nlohmann::json scan_json(const ScanEvidence& e) {
  return {{"kind", e.kind},
          {"low_percentile", e.low_percentile},
          {"padding", e.padding ? nlohmann::json(*e.padding) : nlohmann::json()},
          {"outside_fraction", e.outside_fraction},
          {"soft_tissue", e.soft_tissue ? nlohmann::json(*e.soft_tissue) : nlohmann::json()},
          {"extent_mm", e.extent_mm},
          {"slice_mm", e.slice_mm},
          {"sides_covered", e.sides_covered}};
}

}  // namespace

ScanEvidence scan_evidence(const io::Volume& v, std::optional<double> padding, double outside_fraction) {
  c10::AutoGradMode no_grad(false);
  ScanEvidence e;
  const at::Tensor data = subsampled(v.data.cpu());
  const std::array<double, 2> percentiles = io::intensity_percentiles(data, 0.5, 99.0);
  e.low_percentile = percentiles[0];
  e.padding = padding;
  e.outside_fraction = outside_fraction;
  const io::Geometry& g = v.geometry;
  for (int a = 0; a < 3; ++a) e.extent_mm[size_t(a)] = double(g.size[size_t(a)]) * g.spacing[size_t(a)];
  e.slice_mm = *std::max_element(g.spacing.begin(), g.spacing.end());
  const bool hounsfield = e.low_percentile <= kHounsfieldAir;
  at::Tensor body;
  if (hounsfield) {
    at::Tensor soft = data.gt(-400).logical_and(data.lt(400));
    if (padding) soft = soft.logical_and(data.ne(*padding));
    const at::Tensor values = data.masked_select(soft);
    if (values.numel() > 0) e.soft_tissue = values.median().item<double>();
    body = data.gt(kHounsfieldAir);
    const bool offset = e.soft_tissue && std::abs(*e.soft_tissue - kSoftTissueHu) > kConeBeamOffset;
    const bool cone_beam_fov = padding && *padding > kReconstructionPadding && outside_fraction >= kConeBeamOutside;
    e.kind = offset || cone_beam_fov ? "cbct" : "ct";
  } else {
    e.kind = "mr";
    body = data.gt(0.1 * percentiles[1]);
  }
  e.sides_covered = sides_covered(body.to(at::kFloat), g.spacing);
  return e;
}

PairEvidence pair_evidence(const ScanEvidence& fixed, const ScanEvidence& moving, const io::Geometry& fixed_grid,
                           const io::Geometry& moving_grid) {
  PairEvidence p{fixed, moving};
  p.box_overlap = box_overlap(fixed_grid, moving_grid);
  const bool hounsfield = fixed.kind != "mr" && moving.kind != "mr";
  p.same_patient = hounsfield && (fixed.kind == "cbct" || moving.kind == "cbct" || p.box_overlap >= kSameFrameOverlap);
  return p;
}

PresetChoice choose_preset(const RegistrationSettings& s, const PairEvidence& e) {
  PresetChoice c;
  c.evidence = e;
  c.automatic = s.preset == "auto";
  const std::string scans = "fixed: " + describe(e.fixed) + "; moving: " + describe(e.moving);
  if (!c.automatic) {
    c.name = s.preset;
    c.reason = "given (--preset " + s.preset + "); " + scans;
  } else if (e.fixed.kind != "mr" && e.moving.kind != "mr") {
    c.name = "ct-cbct";
    c.reason = "both scans in Hounsfield-like units: " + scans;
  } else if (e.fixed.kind == "mr" && e.moving.kind == "mr" && std::min(e.fixed.slice_mm, e.moving.slice_mm) >= kThickSliceMm &&
             std::min(e.fixed.sides_covered, e.moving.sides_covered) >= kTrunkSides) {
    c.name = "breathing";
    c.reason = "both MR with thick slices, the body cut by the grid's sides (a trunk): " + scans;
  } else {
    c.name = "brain";
    c.reason = "neither a CT pair nor a trunk MR with thick slices: " + scans;
  }
  // One patient's scans: no scale or shear between them, whatever the preset asks.
  const RegistrationSettings base = c.automatic ? with_preset(s, c.name) : s;
  c.rigid_at_most = e.same_patient && base.affine && !base.rigid && !is_given(s, "affine") && !is_given(s, "rigid");
  if (c.rigid_at_most) c.reason += "; one patient in one frame of reference: the pre-alignment rigid at most";
  return c;
}

RegistrationSettings chosen_settings(const RegistrationSettings& s, const PresetChoice& c) {
  RegistrationSettings out = c.automatic ? with_preset(s, c.name) : s;
  if (c.rigid_at_most) out.rigid = true;
  return out;
}

nlohmann::json choice_json(const PresetChoice& c) {
  return {{"name", c.name},
          {"automatic", c.automatic},
          {"reason", c.reason},
          {"rigid_at_most", c.rigid_at_most},
          {"evidence",
           {{"fixed", scan_json(c.evidence.fixed)},
            {"moving", scan_json(c.evidence.moving)},
            {"box_overlap", c.evidence.box_overlap},
            {"same_patient", c.evidence.same_patient}}}};
}

}  // namespace autoreg::pipeline
