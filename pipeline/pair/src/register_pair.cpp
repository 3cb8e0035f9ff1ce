#include "autoreg/pair/register_pair.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>

#include <memory>
#include <stdexcept>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"
#include "autoreg/device.h"
#include "autoreg/ops.h"
#include "autoreg/pair/default_model.h"
#include "autoreg/pair/frame.h"
#include "autoreg/pair/preset_choice.h"
#include "autoreg/registration/discrete.h"
#include "autoreg/registration/field_box.h"
#include "autoreg/registration/field_of_view.h"
#include "autoreg/registration/model_file.h"
#include "similarity_check.h"

namespace autoreg::pipeline {

PairOptions pair_options(const RegistrationSettings& s) {
  PairOptions o = with_settings(PairOptions{}, s);
  if (!s.model.empty()) {
    o.model_file = resolve_model_name(s.model);
    o.model = std::make_shared<registration::Model>(registration::load_model(o.model_file));
  }
  return o;
}

PairOptions with_settings(const PairOptions& given, const RegistrationSettings& s) {
  validate(s);
  PairOptions o = given;
  o.settings = s;
  o.stages = !s.deformable ? Stages::AffineOnly : !s.affine ? Stages::DeformableOnly : Stages::AffineAndDeformable;
  o.affine.similarity = o.deformable.similarity = registration::parse_similarity(s.similarity);
  o.affine.rigid = s.rigid;
  o.deformable.regularizer = registration::parse_regularizer(s.regularizer);
  o.deformable.regularization = s.regularization;
  o.deformable.learning_rate = s.learning_rate;
  o.deformable.iterations.assign(s.iterations.begin(), s.iterations.end());
  o.deformable.full_resolution = s.full_resolution;
  o.deformable.compare_finer = int(s.compare_finer);
  o.deformable.window_mm = s.ncc_window_mm;
  o.affine.iterations = {s.affine_iterations[0], s.affine_iterations[1]};
  o.deformable.seed = s.seed;
  o.device = s.device;
  o.refine = s.refine;
  o.intensity_window = s.intensity_window;
  o.padding = s.padding;
  o.exclude_gas = s.exclude_gas;
  o.discrete.reset();
  if (s.discrete_mm > 0) {
    o.discrete.emplace();
    o.discrete->radius_mm = s.discrete_mm;
    o.discrete->grid_mm = s.discrete_grid_mm;
  }
  o.affine_limits = AffineLimits{};
  for (const Preset& p : presets()) {
    if (p.name == s.preset) o.affine_limits = p.limits;
  }
  return o;
}

void check_invertible(const PairOptions& o) {
  if (o.model && !o.model->info.network.diffeomorphic) {
    throw io::IoError(o.model_file + ": this model's network is not diffeomorphic (its fields are not velocities), so it has "
                      "no inverse of its own; register without the inverse field, or with a diffeomorphic model");
  }
}

std::vector<int64_t> deformable_levels(const PairOptions& o) {
  if (o.stages == Stages::AffineOnly) return {};
  return o.model ? std::vector<int64_t>{0, o.refine} : o.deformable.iterations;
}

at::Tensor binary_mask(const at::Tensor& data, const std::string& name) {
  const at::Tensor inside = data.ne(0).to(at::kFloat);
  if (inside.sum().item<double>() == 0) throw io::IoError(name + ": the mask has no voxel inside (all zero)");
  return inside;
}

at::Tensor normalise_intensities(const at::Tensor& data, const at::Tensor& mask, const PairOptions& o,
                      const std::array<double, 2>& percent, PairResult::Intensity* how) {
  if (const auto& window = o.intensity_window) {
    *how = {"window", (*window)[0], (*window)[1]};
  } else {
    const auto [lo, hi] = io::intensity_percentiles(data, percent[0], percent[1], mask);
    *how = lo <= -500 ? PairResult::Intensity{"ct", kCtWindow[0], kCtWindow[1]} : PairResult::Intensity{"percentiles", lo, hi};
  }
  return io::normalize_window(data, how->lo, how->hi);
}

std::array<double, 2> normalisation_percentiles(const PairOptions& o) {
  return o.model ? o.model->info.normalization : std::array<double, 2>{0.5, 99.5};
}

namespace {

// `mask` times `by` (either undefined: the other).
at::Tensor masked_by(const at::Tensor& mask, const at::Tensor& by) {
  if (!by.defined()) return mask;
  return mask.defined() ? mask * by : by;
}

// What `v` shows: its field of view (found by `padding`'s rule, automatic or a value:
// registration/field_of_view.h) times the given `mask`, as PairMasks holds it (`within`),
// and the same kEdgeMarginMm or more inside the field of view's edge (`interior`; the
// given mask alone without an edge); what was found.
struct Shown {
  at::Tensor within, interior;
  bool edge = false;  // a field of view was found: `interior` is not `within`
  PairResult::FieldOfView found;
};

Shown shown(const io::Volume& v, const at::Tensor& mask, const Padding& padding) {
  const registration::FieldOfView fov = registration::field_of_view(
      v.data, padding.rule == Padding::Rule::Value ? std::optional<double>(padding.value) : std::nullopt);
  Shown s;
  s.found = {fov.padding, fov.outside_fraction};
  s.edge = fov.inside.defined();
  const at::Tensor given = mask.defined() ? mask.cpu() : mask;
  if (!s.edge) {
    s.within = s.interior = given;
    return s;
  }
  const io::Geometry& g = v.geometry;
  s.within = masked_by(given, fov.inside);
  s.interior = masked_by(given, registration::away_from_edge(fov.inside, {g.spacing[2], g.spacing[1], g.spacing[0]}, kEdgeMarginMm));
  return s;
}

// Whether kLeastInterior or more of what `s` shows lies kEdgeMarginMm inside its edge
// (true without an edge): a short field of view is judged whole.
bool has_interior(const Shown& s) {
  if (!s.edge) return true;
  return s.interior.sum().item<double>() >= kLeastInterior * s.within.sum().item<double>();
}

// With --exclude-gas, 1 where a Hounsfield-like scan has no gas inside its body (below
// halfway between its air, the 0.5th percentile inside `within`, and its soft tissue;
// registration::enclosed_gas), recorded in *found; undefined for other scans.
at::Tensor not_gas(const io::Volume& v, const ScanEvidence& e, const at::Tensor& within, PairResult::FieldOfView* found) {
  if (e.kind == "mr" || !e.soft_tissue) return at::Tensor();
  const double air = io::intensity_percentiles(v.data, 0.5, 99.5, within)[0];
  found->gas_threshold = (air + *e.soft_tissue) / 2;
  const io::Geometry& g = v.geometry;
  const at::Tensor gas =
      registration::enclosed_gas(v.data, *found->gas_threshold, {g.spacing[2], g.spacing[1], g.spacing[0]}, kGasGrowMm);
  found->gas_fraction = gas.mean().item<double>();
  return 1 - gas;
}

// The pre-alignment (r.options' affine stage) fitted on what `masks` compare, then kept
// only when it lowers the deformable stage's similarity on what `judged` covers (the
// overlap `margin_mm` or more inside the fields of view's edges; r.masks with margin 0)
// by at least kAffineGain of the headers' loss there; otherwise the headers' alignment.
void pre_align(const at::Tensor& f, const io::Geometry& fixed_grid, const io::Volume& m, const PairMasks& masks,
               const PairMasks& judged, double margin_mm, const at::Device& device, PairResult& r) {
  registration::AffineOptions affine = r.options.affine;
  if (masks.fixed.defined()) affine.fixed_mask = masks.fixed.to(device);
  if (masks.moving.defined()) affine.moving_mask = masks.moving.to(device);
  registration::AffineReport report;
  r.affine = registration::fit_affine(f, io::index_to_world(fixed_grid), m.data.to(device),
                                      io::index_to_world(m.geometry), affine, &report)
                 .cpu();
  const registration::Similarity kind = r.options.deformable.similarity;
  PairResult::AffineJudgement& j = r.affine_judgement;
  j.edge_margin_mm = margin_mm;
  j.loss_headers = margin_mm > 0 ? detail::mapped_similarity_loss(kind, f, fixed_grid, m, at::Tensor(), at::Tensor(), judged)
                                 : r.loss_before;
  j.loss_fitted = detail::mapped_similarity_loss(kind, f, fixed_grid, m, r.affine, at::Tensor(), judged);
  r.affine_dropped = !(j.loss_fitted < (1 - kAffineGain) * j.loss_headers);
  if (r.affine_dropped) r.affine = at::eye(4, at::kDouble);
  r.affine_report = report;
}

void lap(StageTimes* times, const char* stage) {
  if (times) times->lap(stage);
}

// The pair as the stages see it, once the masks, the preset and the intensities are settled.
struct Pair {
  at::Tensor f;  // the fixed image normalised, on the device
  io::Volume m;  // the moving image normalised
  io::Geometry fixed_grid, moving_grid;
  PairMasks masks;   // what the registration compares
  PairMasks judged;  // what the pre-alignment and the second opinion are judged on
  at::Device device = at::kCPU;
};

// Only what both scans show is compared: the given masks times the fields of view (the
// checks compare what both show even when the similarity compares everything, --padding
// none: the fields of view found automatically, not reported as used). Then the preset
// (--preset auto: chosen from the images) and the options it gives (r.options), gas left
// out, the intensities normalised (the caller's volumes emptied) and the match at the
// headers' alignment, what the pre-alignment and the result must beat (r.loss_before,
// the second opinion's before).
Pair prepare(io::Volume& fixed, io::Volume& moving, const PairOptions& given_options, const PairMasks& given_masks,
             PairResult& r) {
  const Padding& padding = given_options.padding;
  const bool padding_compared = padding.rule != Padding::Rule::None;
  const Padding rule = padding_compared ? padding : Padding{};
  const Shown fixed_shown = shown(fixed, given_masks.fixed, rule), moving_shown = shown(moving, given_masks.moving, rule);
  if (padding_compared) r.fixed_fov = fixed_shown.found, r.moving_fov = moving_shown.found;
  r.masks = {fixed_shown.within, moving_shown.within};
  PairMasks interior{fixed_shown.interior, moving_shown.interior};
  PairMasks masks = padding_compared ? r.masks : given_masks;
  // The pre-alignment is judged away from the fields of view's edges where an image has
  // one, unless a field of view is too small to have an interior.
  const bool edges = (fixed_shown.edge || moving_shown.edge) && has_interior(fixed_shown) && has_interior(moving_shown);
  r.preset = choose_preset(given_options.settings,
                           pair_evidence(scan_evidence(fixed, fixed_shown.found.padding, fixed_shown.found.outside_fraction),
                                         scan_evidence(moving, moving_shown.found.padding, moving_shown.found.outside_fraction),
                                         fixed.geometry, moving.geometry));
  r.options = with_settings(given_options, chosen_settings(given_options.settings, r.preset));
  const PairOptions& o = r.options;
  if (o.exclude_gas) {  // gas left out as the fields of view are
    const at::Tensor fixed_kept = not_gas(fixed, r.preset.evidence.fixed, r.masks.fixed, &r.fixed_fov);
    const at::Tensor moving_kept = not_gas(moving, r.preset.evidence.moving, r.masks.moving, &r.moving_fov);
    for (PairMasks* p : {&r.masks, &masks, &interior}) *p = {masked_by(p->fixed, fixed_kept), masked_by(p->moving, moving_kept)};
  }
  const at::Device device = ops::parse_device(o.device);
  const std::array<double, 2> percentiles = normalisation_percentiles(o);
  // Percentiles of what the given masks cover, when given (not of the fields of view:
  // a CBCT's padding at −1000 is what says it is a CT, and its window is HU's).
  const at::Tensor f =
      normalise_intensities(fixed.data, given_masks.fixed, o, percentiles, &r.fixed_intensity).to(device);
  const io::Volume m{normalise_intensities(moving.data, given_masks.moving, o, percentiles, &r.moving_intensity),
                     moving.geometry};
  fixed.data = moving.data = at::Tensor();  // the caller's copies (if any) stay
  const registration::Similarity kind = o.deformable.similarity;
  r.loss_before = detail::mapped_similarity_loss(kind, f, fixed.geometry, m, at::Tensor(), at::Tensor(), r.masks);
  // The second opinion, judged away from the edges as the pre-alignment is.
  const PairMasks& judged = edges ? interior : r.masks;
  r.mutual_information.margin_mm = edges ? kEdgeMarginMm : 0;
  r.mutual_information.before = detail::mapped_mutual_information(f, fixed.geometry, m, at::Tensor(), at::Tensor(), judged);
  return {f, m, fixed.geometry, moving.geometry, masks, judged, device};
}

// Instance optimisation of `moved` (on the fixed grid) to the fixed image, fitted only in
// the box around the two foregrounds (a 256³ head scan is mostly air) and extended
// outside it by its border values: continuous, so no folding at the box's faces. The
// half-resolution result goes to the full grid in one pass, followed by `then` if given.
// With the inverse, *inverse gets the fitted part's inverse (exp(−v)), on its own. The
// moving mask, when given, goes along with `moved` (on the fixed grid, through the same
// map).
at::Tensor fit_on_foreground(const Pair& p, bool crop_to_box, const at::Tensor& moved, registration::InstanceOptions options,
                             const at::Tensor& then, at::Tensor* inverse, const at::Tensor& moving_mask) {
  using registration::crop;
  using registration::expand_field;
  const at::Tensor& f = p.f;
  // The pyramid is planned on the fixed grid's voxels (tensor axes D, H, W are ITK's k, j, i).
  options.spacing = {p.fixed_grid.spacing[2], p.fixed_grid.spacing[1], p.fixed_grid.spacing[0]};
  // With a fixed mask, the box around it: only its voxels are compared.
  const registration::Box box = !crop_to_box ? registration::Box{{{0, f.size(2)}, {0, f.size(3)}, {0, f.size(4)}}}
                                : p.masks.fixed.defined() ? registration::foreground_box(p.masks.fixed, p.masks.fixed, 8)
                                                          : registration::foreground_box(f, moved, 8);
  if (p.masks.fixed.defined()) options.fixed_mask = crop(p.masks.fixed.to(p.device), box);
  if (moving_mask.defined()) options.moving_mask = crop(moving_mask.to(p.device), box);
  if (options.initial_velocity.defined()) options.initial_velocity = crop(options.initial_velocity.to(p.device), box);
  at::Tensor velocity;
  {
    c10::AutoGradMode grad(true);
    velocity = registration::fit_half_velocity(crop(f, box), crop(moved, box).to(p.device), options);
  }
  if (inverse) *inverse = expand_field(ops::integrate(-velocity, options.integration_steps), box, f.sizes().slice(2));
  return expand_field(ops::integrate(velocity, options.integration_steps), box, f.sizes().slice(2), then);
}

// The deformable part after r.affine (1×3×D×H×W, voxels of the fixed grid): none with
// the affine only; the network's, refined by instance optimisation with o.refine; or
// instance optimisation's, from the discrete search's field with o.discrete. With
// o.inverse, *undo gets its inverse.
at::Tensor deformable_part(const Pair& p, const PairResult& r, at::Tensor* undo, StageTimes* times) {
  const PairOptions& o = r.options;
  const at::Tensor& f = p.f;
  // The moving mask carried as the moving image is, when given.
  const auto moved_mask = [&](const at::Tensor& deformation_so_far) {
    if (!p.masks.moving.defined()) return at::Tensor();
    return io::sample_mapped({p.masks.moving.cpu(), p.moving_grid}, p.fixed_grid, r.affine, deformation_so_far);
  };
  at::Tensor* const want_undo = o.inverse ? undo : nullptr;
  if (o.stages == Stages::AffineOnly) return at::zeros({1, 3, f.size(2), f.size(3), f.size(4)}, at::kFloat);
  if (o.model) {
    const io::Volume fixed_normalised{f.cpu(), p.fixed_grid};
    const io::Geometry frame = model_frame(fixed_normalised, o.model->info);
    o.model->network->to(p.device);
    at::Tensor deformation = predict_on_fixed_grid(*o.model, on_frame(p.m, r.affine, frame).to(p.device),
                                                   on_frame(fixed_normalised, at::eye(4, at::kDouble), frame).to(p.device),
                                                   frame, p.fixed_grid, want_undo);
    lap(times, "network");
    if (o.refine > 0) {
      // Instance optimisation of a residual field on the network's result: the moving
      // image warped so far, then x ↦ x + r(x) followed by the network's map.
      const at::Tensor moved = io::sample_mapped(p.m, p.fixed_grid, r.affine, deformation);
      registration::InstanceOptions refine = o.deformable;
      refine.iterations = deformable_levels(o);
      refine.learning_rate = o.refine_learning_rate;
      at::Tensor undo_refine;
      deformation = fit_on_foreground(p, o.crop, moved, refine, deformation, o.inverse ? &undo_refine : nullptr,
                                      moved_mask(deformation));
      // The inverse undoes the network's map first, then the refinement.
      if (o.inverse) *undo = ops::compose(undo_refine, *undo);
      lap(times, "refine");
    }
    return deformation;
  }
  // The moving image after the affine, on the fixed grid, is what the field is fitted to.
  const at::Tensor moved = io::sample_mapped(p.m, p.fixed_grid, r.affine, at::Tensor());
  lap(times, "resample");
  registration::InstanceOptions deformable = o.deformable;
  if (o.discrete) {
    // The discrete search's displacement (fixed voxels) is where the velocity starts.
    registration::DiscreteOptions d = *o.discrete;
    d.spacing = {p.fixed_grid.spacing[2], p.fixed_grid.spacing[1], p.fixed_grid.spacing[0]};
    deformable.initial_velocity = registration::discrete_displacement(f, moved.to(p.device), d, p.masks.fixed);
    lap(times, "discrete");
  }
  const at::Tensor deformation = fit_on_foreground(p, o.crop, moved, deformable, at::Tensor(), want_undo, moved_mask(at::Tensor()));
  lap(times, "deformable");
  return deformation;
}

}  // namespace

PairResult register_pair(io::Volume fixed, io::Volume moving, const PairOptions& given_options, StageTimes* times,
                         const PairMasks& given_masks) {
  PairResult r;
  const Pair p = prepare(fixed, moving, given_options, given_masks, r);
  lap(times, "normalise");
  const PairOptions& o = r.options;
  r.affine = at::eye(4, at::kDouble);
  if (o.stages != Stages::DeformableOnly) {
    pre_align(p.f, p.fixed_grid, p.m, p.masks, p.judged, r.mutual_information.margin_mm, p.device, r);
    lap(times, "affine");
  }
  c10::AutoGradMode no_grad(false);
  at::Tensor undo;  // with o.inverse: the inverse of the deformable part, 1×3×D×H×W fixed voxels
  at::Tensor deformation = deformable_part(p, r, &undo, times);
  if (o.inverse) {
    r.inverse = io::inverse_map(p.moving_grid, p.fixed_grid, r.affine, undo);
    lap(times, "inverse");
  }
  // In place: the deformable part becomes the whole map.
  r.displacement = io::compose_affine_(p.fixed_grid, r.affine, deformation);
  lap(times, "compose");
  const registration::Similarity kind = o.deformable.similarity;
  r.loss_after = detail::mapped_similarity_loss(kind, p.f, p.fixed_grid, p.m, at::Tensor(), r.displacement, r.masks);
  r.mutual_information.after =
      detail::mapped_mutual_information(p.f, p.fixed_grid, p.m, at::Tensor(), r.displacement, p.judged);
  lap(times, "check");
  return r;
}

}  // namespace autoreg::pipeline
