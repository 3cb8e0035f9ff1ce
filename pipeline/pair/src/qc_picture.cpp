#include "autoreg/pipeline/qc_picture.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "autoreg/io/grid.h"
#include "autoreg/ops.h"
#include "autoreg/qc/picture.h"

namespace autoreg::pipeline {
namespace {

qc::VolumeView view(const at::Tensor& t) {
  return {t.data_ptr<float>(), {t.size(2), t.size(3), t.size(4)}};
}

}  // namespace

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
