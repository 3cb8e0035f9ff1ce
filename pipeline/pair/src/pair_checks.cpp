#include "autoreg/pair/pair_checks.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace autoreg::pipeline {

AffineLimits affine_limits(const PairOptions& o, bool same_patient) {
  if (o.affine.rigid) return rigid_limits("rigid");
  if (same_patient) return rigid_limits("same patient's");
  return o.affine_limits;  // the preset's (pair_options)
}

AffineShape affine_shape(const at::Tensor& affine) {
  const at::Tensor a = affine.to(at::kDouble).cpu().slice(0, 0, 3).slice(1, 0, 3);
  const auto [u, s, vh] = at::linalg_svd(a);
  AffineShape shape;
  for (int i = 0; i < 3; ++i) shape.scales[size_t(i)] = s[i].item<double>();
  at::Tensor r = u.matmul(vh);
  shape.reflects = at::det(r).item<double>() < 0;
  const double c = std::clamp((at::trace(r).item<double>() - 1) / 2, -1.0, 1.0);
  shape.rotation_degrees = std::acos(c) * 180.0 / M_PI;
  return shape;
}

namespace {

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

std::vector<PairWarning> check_pair(const PairOptions& o, const PairResult& r, double folding_percent) {
  std::vector<PairWarning> w;
  const std::string kind = registration::similarity_name(o.deformable.similarity);
  if (!std::isfinite(r.loss_after)) {
    w.push_back({"worse_than_start", "after registration the moving image no longer overlaps the fixed one's field of view",
                 {{"similarity", kind}, {"loss_before", finite_or_null(r.loss_before)}}});
  } else if (std::isfinite(r.loss_before) && r.loss_after > r.loss_before * (1 + kWorseTolerance) + kWorseTolerance) {
    w.push_back({"worse_than_start",
                 "the images match worse after registration than at the headers' alignment (" + kind + " loss " +
                     fixed2(r.loss_before) + " before, " + fixed2(r.loss_after) + " after, on what both scans show)",
                 {{"similarity", kind}, {"loss_before", r.loss_before}, {"loss_after", r.loss_after}}});
  }
  if (o.stages != Stages::DeformableOnly && r.affine.defined()) {
    const AffineLimits limits = affine_limits(o, r.preset.evidence.same_patient);
    const AffineShape shape = affine_shape(r.affine);
    const auto [lo, hi] = std::minmax_element(shape.scales.begin(), shape.scales.end());
    if (shape.reflects || shape.rotation_degrees > limits.max_rotation_degrees || *lo < limits.min_scale ||
        *hi > limits.max_scale) {
      char text[256];
      std::snprintf(text, sizeof text,
                    "the affine turns by %.1f degrees and scales by %.2f to %.2f%s, beyond what the %s pre-alignment "
                    "allows (%.0f degrees, %.2f to %.2f)",
                    shape.rotation_degrees, *lo, *hi, shape.reflects ? " with a reflection" : "",
                    limits.from.c_str(),
                    limits.max_rotation_degrees, limits.min_scale,
                    limits.max_scale);
      w.push_back({"affine_limits", text,
                   {{"rotation_degrees", shape.rotation_degrees}, {"scales", shape.scales}, {"reflects", shape.reflects},
                    {"max_rotation_degrees", limits.max_rotation_degrees},
                    {"scale_range", {limits.min_scale, limits.max_scale}}}});
    }
  }
  const PairResult::SecondOpinion& mi = r.mutual_information;
  if (std::isfinite(mi.before) && std::isfinite(mi.after) && mi.after - 1 < (mi.before - 1) * (1 - kSecondOpinionDrop)) {
    char where[64] = "";
    if (mi.margin_mm > 0) std::snprintf(where, sizeof where, " %.0f mm or more inside the fields of view", mi.margin_mm);
    char text[400];
    std::snprintf(text, sizeof text,
                  "a second opinion disagrees: the images' normalised mutual information%s falls from %.4f at the "
                  "headers' alignment to %.4f, although the registration optimised its own %s similarity; the result "
                  "may follow an edge, the noise or a structure that is in one scan only rather than the anatomy",
                  where, mi.before, mi.after,
                  kind.c_str());
    w.push_back({"second_opinion", text,
                 {{"measure", "normalised mutual information"}, {"before", mi.before}, {"after", mi.after},
                  {"edge_margin_mm", mi.margin_mm}, {"least_kept", 1 - kSecondOpinionDrop}}});
  }
  if (folding_percent > kFoldingLimitPercent) {
    char text[160];
    std::snprintf(text, sizeof text, "%.2f %% of the field's voxels fold (more than %.0f %%)", folding_percent,
                  kFoldingLimitPercent);
    w.push_back({"folding", text, {{"non_positive_jacobian_percent", folding_percent}, {"limit_percent", kFoldingLimitPercent}}});
  }
  return w;
}

nlohmann::json warnings_json(const std::vector<PairWarning>& warnings) {
  nlohmann::json j = nlohmann::json::array();
  for (const PairWarning& w : warnings) j.push_back({{"check", w.check}, {"message", w.message}, {"evidence", w.evidence}});
  return j;
}

std::string warnings_line(const std::vector<PairWarning>& warnings) {
  std::string line;
  for (const PairWarning& w : warnings) line += (line.empty() ? "WARNING: " : "; ") + w.message;
  return line;
}

}  // namespace autoreg::pipeline
