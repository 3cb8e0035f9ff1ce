#include "autoreg/pair/qc_picture.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/ops.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/qc/picture.h"
#include "autoreg/registration/field_of_view.h"

namespace autoreg::pipeline {
namespace {

qc::VolumeView view(const at::Tensor& t) {
  return {t.data_ptr<float>(), {t.size(2), t.size(3), t.size(4)}};
}

qc::MaskView mask_view(const at::Tensor& t) {
  return {t.data_ptr<uint8_t>(), {t.size(2), t.size(3), t.size(4)}};
}

// A CT's soft-tissue window: W400 L40 HU, the radiologist's abdominal window.
constexpr double kSoftTissueWidth = 400, kSoftTissueLevel = 40;

// A cone-beam CT's window: the 1st-95th percentile of its body (above −500, air left
// out) inside its field of view. Its numbers are not HU and drift across the field of view
// (scatter, cupping): a fixed soft-tissue window saturates half of it; the top 5 % (bone,
// the brightest shading) saturate instead.
constexpr double kBodyAbove = -500, kCbctLow = 0.01, kCbctHigh = 0.95;

qc::GreyWindow cbct_window(const at::Tensor& voxels, const at::Tensor& inside) {
  const at::Tensor v = voxels.cpu().to(at::kFloat);
  at::Tensor body = v.gt(kBodyAbove);
  if (inside.defined()) body = body.logical_and(inside.cpu().ne(0));
  at::Tensor values = v.masked_select(body);
  if (values.numel() < 100) return {};
  const int64_t step = std::max<int64_t>(1, values.numel() / (1 << 20));
  values = values.slice(0, 0, values.numel(), step);
  const at::Tensor q = at::quantile(values, at::tensor({kCbctLow, kCbctHigh}, at::kFloat));
  char name[96];
  std::snprintf(name, sizeof name, "%.0fst-%.0fth percentile of its body in its field of view, a CBCT", kCbctLow * 100,
                kCbctHigh * 100);
  return {q[0].item<float>(), q[1].item<float>(), name};
}

// Each scan's window by its kind (QcVolumes: set_scan_views).
qc::GreyWindow window_of(const ScanEvidence& scan, const at::Tensor& voxels, const at::Tensor& inside) {
  if (scan.kind == "ct") {
    char name[96];
    std::snprintf(name, sizeof name, "W%.0f L%.0f HU, CT soft tissue", kSoftTissueWidth, kSoftTissueLevel);
    return {float(kSoftTissueLevel - kSoftTissueWidth / 2), float(kSoftTissueLevel + kSoftTissueWidth / 2), name};
  }
  if (scan.kind == "cbct") {
    qc::GreyWindow w = cbct_window(voxels, inside);
    if (std::isfinite(w.lo)) return w;
  }
  qc::GreyWindow w;
  w.name = inside.defined() ? "1st-99th percentile inside its field of view" : "";
  return w;
}

}  // namespace

void set_scan_views(QcVolumes& v, const PairResult& r, const at::Tensor& fixed_voxels, const io::Volume& moving) {
  c10::AutoGradMode no_grad(false);
  const bool fov = r.fixed_fov.padding || r.moving_fov.padding;
  if (fov) {
    if (r.fixed_fov.padding) {
      v.fixed_inside = registration::field_of_view(fixed_voxels.cpu(), r.fixed_fov.padding).inside;
    }
    at::Tensor moving_inside = r.moving_fov.padding ? registration::field_of_view(moving.data.cpu(), r.moving_fov.padding).inside
                                                    : at::Tensor();
    // As a label map (nearest neighbour, 0 beyond the moving grid): cheaper than trilinear
    // (the qc stage on CT -> CBCT02 went from 1.5 to 1.0-1.2 s).
    moving_inside = moving_inside.defined() ? moving_inside.gt(0.5).to(at::kInt) : at::ones_like(moving.data.cpu(), at::kInt);
    v.warped_inside = io::sample_mapped({moving_inside, moving.geometry}, v.grid, at::Tensor(), r.displacement).ne(0);
  }
  v.fixed_window = window_of(r.preset.evidence.fixed, fixed_voxels, v.fixed_inside);
  v.warped_window = window_of(r.preset.evidence.moving, v.warped, v.warped_inside);
}

void write_qc_picture(const std::string& path, const QcVolumes& v) {
  const at::Tensor fixed = v.fixed.to(at::kFloat).contiguous();
  const at::Tensor warped = v.warped.to(at::kFloat).contiguous();
  at::Tensor labels, log_jacobian;
  qc::PictureInputs in;
  in.fixed = view(fixed);
  in.warped = view(warped);
  if (v.labels.defined()) {
    labels = v.labels.to(at::kInt).contiguous();
    in.labels = {labels.data_ptr<int32_t>(), {labels.size(2), labels.size(3), labels.size(4)}};
  }
  // Tensor axes D, H, W are the grid's k, j, i.
  in.spacing = {v.grid.spacing[2], v.grid.spacing[1], v.grid.spacing[0]};
  const std::string code = io::orientation_code(v.grid);
  in.axis_letters = {code[2], code[1], code[0]};
  at::Tensor fixed_inside, warped_inside;
  if (v.fixed_inside.defined()) {
    fixed_inside = v.fixed_inside.ne(0).to(at::kByte).contiguous();
    in.fixed_inside = mask_view(fixed_inside);
  }
  if (v.warped_inside.defined()) {
    warped_inside = v.warped_inside.ne(0).to(at::kByte).contiguous();
    in.warped_inside = mask_view(warped_inside);
  }
  in.fixed_window = v.fixed_window;
  in.warped_window = v.warped_window;
  in.title = v.title;
  in.caption = v.caption;
  in.warning = v.warning;
  if (v.displacement.defined()) {
    // Only the three planes drawn need the Jacobian (a whole 256³ field's took a second):
    // each from a slab of three planes, central differences across it.
    in.centre = qc::picture_layout(in).centre;
    log_jacobian = at::zeros_like(fixed);
    for (int64_t a = 0; a < 3; ++a) {
      const int64_t c = in.centre[a], n = fixed.size(2 + a);
      const int64_t lo = std::max<int64_t>(0, c - 1), hi = std::min<int64_t>(n, c + 2);
      const at::Tensor det = ops::jacobian_determinant(v.displacement.to(at::kFloat).narrow(2 + a, lo, hi - lo));
      // log of a determinant ≤ 0 is NaN or −inf: the picture's folding colour.
      log_jacobian.narrow(2 + a, c, 1).copy_(at::log(det.narrow(2 + a, c - lo, 1)));
    }
    in.log_jacobian = view(log_jacobian);
  }
  qc::write_picture(path, in);
}

}  // namespace autoreg::pipeline
