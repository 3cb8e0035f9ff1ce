// One round of `autoreg template` (template_job.h): every subject registered to the
// current template, spread over the ranks of a distributed run. Rank r registers the
// subjects i ≡ r (mod world); then every rank gets every subject's result by a sum over
// the ranks in which the other ranks give negative zeros, so each rank holds, bit for bit, what one
// process registering all of them would hold, and computes the same next template.
#pragma once

#include <ATen/core/Tensor.h>

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autoreg/io/volume.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/runs/template_settings.h"
#include "autoreg/registration/collective.h"

namespace autoreg::pipeline::detail {

struct Subject {
  std::string image, labels, name;
  io::Volume volume;  // intensities normalised to [0, 1]
};

// An image read and normalised as the template's subjects are (to [0, 1] by its 0.5th
// and 99.5th percentiles, or the CT window); io::IoError when it has no contrast.
io::Volume read_normalised(const std::string& image, const PairOptions& o);

// The subjects of the manifest, read and normalised; names from their image files
// (made unique with _2, _3, ...: a.nii, x/a.nii and a_2.nii are a, a_2 and a_2_2).
std::vector<Subject> read_subjects(const TemplateSettings& s, const PairOptions& o);

// What a rank throws when another rank failed: that rank reports the cause.
struct PeerFailed : std::runtime_error {
  PeerFailed() : std::runtime_error("template: another rank failed (its message says why)") {}
};

// The processes a template is built on (one without a collective).
struct Ranks {
  registration::Collective* collective = nullptr;
  int rank = 0, world = 1;
  bool mine(size_t subject) const { return int(subject % size_t(world)) == rank; }
  bool lead() const { return rank == 0; }
  // Every rank stops when one failed: its exception rethrown where it happened, a
  // message naming that another rank failed elsewhere.
  void stop_if_failed(const std::exception_ptr& failure) const;
  // `work(i)` for each of this rank's subjects i < n until one throws; then every rank
  // stops if any rank's failed (stop_if_failed).
  void each_mine(size_t n, const std::function<void(size_t)>& work) const;
  // Subject i's tensors, from the rank that owns it, to every rank, in place. On the other
  // ranks they need only the owner's shapes and dtypes: filled with negative zeros and
  // summed over the ranks (x + (-0) is x, for x = ±0 too), every rank gets the owner's
  // values bit for bit.
  void from_owner(size_t i, std::vector<at::Tensor>& tensors) const;
  // Rank 0's tensors copied into every rank's, in place.
  void from_lead(std::vector<at::Tensor>& tensors) const;
};

struct Round {
  // Every subject's: on a rank other than its owner, `displacement` and `affine` alone
  // (no `inverse`).
  std::vector<PairResult> results;
  std::vector<at::Tensor> warped;  // each subject on the template grid
};

// Every subject registered to the template (fixed), as `autoreg register` does, with the
// inverse fields when `inverse`. `stage` names the round in the progress lines. Throws
// io::IoError naming a subject that covers less than half the template's foreground.
Round register_all(const io::Volume& templ, const std::vector<Subject>& subjects, PairOptions o, bool inverse,
                   const std::string& stage, const TemplateSettings& s, const Ranks& ranks);

// The average of the warped subjects (each 1×1×D×H×W): mean, median or sharpened.
at::Tensor average(const std::vector<at::Tensor>& warped, Averaging how);

// Pearson correlation of two volumes over `mask`.
double correlation(const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask);

}  // namespace autoreg::pipeline::detail
