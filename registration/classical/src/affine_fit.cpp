#include "affine_fit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "affine_kernel.h"
#include "autoreg/registration/similarity.h"
#include "mutual_information.h"

namespace autoreg::registration::detail {

// World coordinates of every voxel of `image` (N×3 float64, rows in memory order).
at::Tensor world_points(const at::Tensor& image, const at::Tensor& index_to_world) {
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  const auto grids = at::meshgrid({at::arange(image.size(2), opts), at::arange(image.size(3), opts),
                                   at::arange(image.size(4), opts)},
                                  "ij");
  const at::Tensor ijk = at::stack({grids[2].flatten(), grids[1].flatten(), grids[0].flatten()}, 1);
  return ijk.matmul(index_to_world.slice(0, 0, 3).slice(1, 0, 3).t()) +
         index_to_world.slice(0, 0, 3).select(1, 3);
}

namespace {

// Mutual information of two intensity samples in [0, 1] (n each) over the points where
// `inside` is 1, from a joint histogram of 32 bins with Gaussian soft binning
// (differentiable in the moving intensities, as Mattes' Parzen-window estimate), through
// autograd: on a GPU. On the CPU detail::mutual_information computes the same by hand.
at::Tensor mutual_information(const at::Tensor& fixed, const at::Tensor& moving, const at::Tensor& inside) {
  const int64_t bins = 32;
  const at::Tensor centres = (at::arange(bins, fixed.options()) + 0.5) / double(bins);
  const double sigma = 1.0 / double(bins);
  const auto soft = [&](const at::Tensor& v) {
    at::Tensor w = at::exp(-(v.unsqueeze(1) - centres).pow(2) / (2 * sigma * sigma));  // n×B
    return w / (w.sum(1, true) + 1e-12);
  };
  const at::Tensor wf = soft(fixed.clamp(0, 1)) * inside.unsqueeze(1);
  const at::Tensor wm = soft(moving.clamp(0, 1));
  at::Tensor joint = wf.t().matmul(wm);
  joint = joint / (joint.sum() + 1e-12);
  const at::Tensor pf = joint.sum(1, true), pm = joint.sum(0, true);
  return (joint * (at::log(joint + 1e-12) - at::log(pf.matmul(pm) + 1e-12))).sum();
}

// The affine stage's loss between fixed and moving intensities at the same sample points
// (1×n each), over the points that map inside the moving volume (`inside`, n, 0 or 1):
// outside it the moving image is unknown, not dark, and counting those points would
// pull a moving image with a smaller field of view (a slab) to stretch over the fixed
// one. With Mind, mutual information (above). NCC is global here (1 − Pearson
// correlation): an affine has 12 parameters to explain the whole image, and local
// windows over flat regions add only noise.
at::Tensor sample_loss(Similarity kind, const at::Tensor& fixed, const at::Tensor& moving,
                       const at::Tensor& inside) {
  const at::Tensor count = inside.sum();
  if (count.item<double>() < 1) return moving.sum() * 0 + 1;  // no overlap: the worst loss
  // MIND-SSC compares local structure, which at the affine stage's 4 mm and 2 mm is too
  // weak to fix scale (a T1 → T2 slab drifted to half its size); mutual information of
  // intensities is the standard multimodal affine metric (elastix's and ANTs' default).
  if (kind == Similarity::Mind) return -mutual_information(fixed.squeeze(0), moving.squeeze(0), inside);
  if (kind != Similarity::Ncc) return ((fixed - moving).pow(2) * inside).sum() / count;
  const at::Tensor mf = (fixed * inside).sum() / count, mm = (moving * inside).sum() / count;
  const at::Tensor a = (fixed - mf) * inside, b = (moving - mm) * inside;
  return 1 - (a * b).sum() / ((a * a).sum() * (b * b).sum() + 1e-12).sqrt();
}

}  // namespace

// Optimises affine starts on the pyramid levels. Like elastix, each step compares the
// images at a random subset of the fixed grid's points (a fresh one per step): the 12
// parameters need far fewer points than a volume has, and a step costs the same at any
// image size.
class AffineFit::Impl {
 public:
  Impl(const std::vector<Level>& fixed, const std::vector<Level>& moving, const std::vector<Level>& fixed_mask,
            const std::vector<Level>& moving_mask, at::Tensor c_f, double radius, const AffineOptions& o)
      : c_f_(std::move(c_f)), radius_(radius), o_(o),
        generator_(at::make_generator<at::CPUGeneratorImpl>(o.seed)) {
    for (size_t l = 0; l < fixed.size(); ++l) {
      const at::Tensor& f = fixed[l].image;
      const auto opts = at::TensorOptions().dtype(at::kFloat).device(f.device());
      LevelData d;
      // Fixed points centred on the fixed centre of mass (float32: sub-micron accuracy).
      d.points = (world_points(f, fixed[l].index_to_world) - c_f_).to(opts);
      d.fixed = f.flatten(2).squeeze(0);  // 1×N intensities
      if (!fixed_mask.empty()) {
        // Only the points in the fixed mask (any part of their block inside it).
        const at::Tensor keep = fixed_mask[l].image.flatten().gt(0).nonzero().squeeze(1).to(f.device());
        TORCH_CHECK(keep.numel() > 0, "fit_affine: the fixed mask has no voxel inside");
        d.points = d.points.index_select(0, keep).contiguous();
        d.fixed = d.fixed.index_select(1, keep).contiguous();
      }
      if (o.similarity == Similarity::Mind && f.device().is_cpu()) d.fixed_parzen = detail::parzen_weights(d.fixed.squeeze(0));
      d.moving = moving[l].image;         // 1×1×D×H×W
      if (!moving_mask.empty()) d.moving_mask = moving_mask[l].image.to(f.device());
      const at::Tensor to_index = at::inverse(moving[l].index_to_world);
      std::array<double, 3> norm{};
      for (int a = 0; a < 3; ++a) norm[a] = 2.0 / std::max<int64_t>(1, moving[l].image.size(4 - a) - 1);
      const at::Tensor scale = at::tensor({norm[0], norm[1], norm[2]}, at::kDouble).unsqueeze(1);
      // world → grid_sampler's [-1, 1]: one affine map.
      d.to_grid = (scale * to_index.slice(0, 0, 3).slice(1, 0, 3)).to(opts);
      d.to_grid_offset = (scale.squeeze(1) * to_index.slice(0, 0, 3).select(1, 3) - 1).to(opts);
      const auto ti = to_index.accessor<double, 2>();
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) d.to_index[r * 4 + c] = ti[r][c];
      levels_.push_back(std::move(d));
    }
  }

  // Runs `steps` steps at `level` from (m0, t0); returns the optimised (m, t) and the
  // loss of the result on all the level's points.
  std::tuple<at::Tensor, at::Tensor, double> run(int level, const at::Tensor& m0,
                                                 const at::Tensor& t0, int64_t steps,
                                                 bool report) {
    const LevelData& d = levels_[level];
    if (d.points.device().is_cpu() && o_.similarity != Similarity::Mind && !d.moving_mask.defined()) {
      return run_fused(level, m0, t0, steps, report);
    }
    const auto opts = d.points.options();
    const at::Tensor c_f = c_f_.to(opts);
    // Parameters in millimetres: b moves a point at distance `radius` by ~|b| mm; rigid,
    // b is a rotation vector (radians × radius) applied before the start's rotation.
    at::Tensor b = at::zeros(o_.rigid ? at::IntArrayRef{3} : at::IntArrayRef{3, 3}, opts).requires_grad_();
    at::Tensor tau = at::zeros({3}, opts).requires_grad_();
    const at::Tensor m_start = m0.to(opts), t_start = t0.to(opts);
    const auto matrix = [&] {
      if (!o_.rigid) return m_start + b / radius_;
      const at::Tensor w = b / radius_, zero = at::zeros({}, opts);
      const at::Tensor skew = at::stack({zero, -w[2], w[1], w[2], zero, -w[0], -w[1], w[0], zero}).view({3, 3});
      return at::linalg_matrix_exp(skew).matmul(m_start);
    };
    const double lr0 = o_.learning_rate / double(1 << level);
    torch::optim::Adam adam({b, tau}, torch::optim::AdamOptions(lr0));
    const int64_t n = d.points.size(0);
    const int64_t samples = std::min<int64_t>(n, o_.samples);
    const auto loss_at = [&](const at::Tensor& index) {
      const at::Tensor x = index.defined() ? d.points.index_select(0, index) : d.points;
      const at::Tensor y = x.matmul(matrix().t()) + c_f + t_start + tau;
      const at::Tensor normalised = y.matmul(d.to_grid.t()) + d.to_grid_offset;  // n×3
      at::Tensor inside = (normalised.detach().abs() <= 1).all(1).to(opts.dtype());
      if (d.moving_mask.defined()) {  // and inside the moving mask
        inside = inside * at::grid_sampler(d.moving_mask, normalised.detach().view({1, 1, 1, -1, 3}), 0, 0, true)
                              .flatten()
                              .gt(0.5)
                              .to(opts.dtype());
      }
      const at::Tensor moved =
          at::grid_sampler(d.moving, normalised.view({1, 1, 1, -1, 3}), /*bilinear*/ 0, /*zeros*/ 0, true)
              .flatten(2)
              .squeeze(0);  // 1×n
      if (d.fixed_parzen.defined()) {  // mutual information on the CPU: the fixed side's weights kept
        if (inside.sum().item<double>() < 1) return moved.sum() * 0 + 1;  // no overlap: the worst loss
        const at::Tensor wf = index.defined() ? d.fixed_parzen.index_select(0, index) : d.fixed_parzen;
        return -detail::mutual_information(wf * inside.unsqueeze(1), moved.squeeze(0));
      }
      const at::Tensor fixed = index.defined() ? d.fixed.index_select(1, index) : d.fixed;
      return sample_loss(o_.similarity, fixed, moved, inside);
    };
    {
      c10::AutoGradMode enable_grad(true);
      for (int64_t it = 0; it < steps; ++it) {
        // Cosine decay to a tenth of the rate over the level.
        const double lr = lr0 * (0.1 + 0.45 * (1 + std::cos(M_PI * double(it) / double(steps))));
        static_cast<torch::optim::AdamOptions&>(adam.param_groups()[0].options()).lr(lr);
        adam.zero_grad();
        at::Tensor index;
        if (samples < n) index = at::randint(n, {samples}, generator_, at::kLong).to(opts.device());
        const at::Tensor loss = loss_at(index);
        loss.backward();
        adam.step();
        if (report && o_.progress) o_.progress(level, it, loss.item<double>());
      }
    }
    c10::AutoGradMode no_grad(false);
    const double final_loss = loss_at(at::Tensor()).item<double>();
    return {matrix().to(at::kDouble).cpu(), (t_start + tau).to(at::kDouble).cpu(), final_loss};
  }

 private:
  // run() on the CPU for NCC and MSE: the loss and its gradient from the fused pass
  // (affine_kernel.h), and Adam (torch's defaults) on the 12 parameters by hand.
  std::tuple<at::Tensor, at::Tensor, double> run_fused(int level, const at::Tensor& m0, const at::Tensor& t0,
                                                       int64_t steps, bool report) {
    const LevelData& d = levels_[level];
    detail::AffineSamples s;
    s.points = d.points.data_ptr<float>();
    s.fixed = d.fixed.data_ptr<float>();
    s.count = d.points.size(0);
    s.moving = d.moving.data_ptr<float>();
    s.size = {d.moving.size(4), d.moving.size(3), d.moving.size(2)};
    s.to_index = d.to_index;
    const bool ncc = o_.similarity == Similarity::Ncc;
    const at::Tensor m_start = m0.to(at::kDouble).contiguous(), t_start = t0.to(at::kDouble).contiguous();
    const at::Tensor c_f = c_f_.to(at::kDouble).contiguous();
    // Parameters as in run(): b (3×3, mm at distance `radius`) and tau (3).
    std::array<double, 12> param{}, first{}, second{};
    // Rigid: the rotation so far, turned by each step's rotation vector (param 0-2, radians
    // × radius) on the left: Adam's state stays in one frame, and it stops where the
    // gradient along rotations vanishes.
    std::array<double, 9> rotation{};
    for (int i = 0; i < 9; ++i) rotation[i] = m_start.data_ptr<double>()[i];
    const auto matrix = [&] {
      if (o_.rigid) return rotation;
      std::array<double, 9> m{};
      for (int i = 0; i < 9; ++i) m[i] = m_start.data_ptr<double>()[i] + param[i] / radius_;
      return m;
    };
    const auto translation = [&](bool with_centre) {
      std::array<double, 3> t{};
      for (int i = 0; i < 3; ++i) t[i] = t_start.data_ptr<double>()[i] + param[9 + i] + (with_centre ? c_f.data_ptr<double>()[i] : 0.0);
      return t;
    };
    const double lr0 = o_.learning_rate / double(1 << level), beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    const int64_t samples = std::min<int64_t>(s.count, o_.samples);
    for (int64_t it = 0; it < steps; ++it) {
      const double lr = lr0 * (0.1 + 0.45 * (1 + std::cos(M_PI * double(it) / double(steps))));
      at::Tensor index;
      if (samples < s.count) index = stratified(s.count, samples);
      std::array<double, 9> gm{};
      std::array<double, 3> gt{};
      const double loss = detail::affine_loss(s, matrix(), translation(true), index.defined() ? index.data_ptr<int64_t>() : nullptr,
                                              samples, ncc, &gm, &gt);
      const double bias1 = 1 - std::pow(beta1, double(it + 1)), bias2 = 1 - std::pow(beta2, double(it + 1));
      if (o_.rigid) gm = rotation_gradient(gm, rotation);
      std::array<double, 12> step{};
      for (int i = 0; i < 12; ++i) {
        if (o_.rigid && i >= 3 && i < 9) continue;
        const double g = i < 9 ? gm[i] / radius_ : gt[i - 9];
        first[i] = beta1 * first[i] + (1 - beta1) * g;
        second[i] = beta2 * second[i] + (1 - beta2) * g * g;
        step[i] = lr / bias1 * first[i] / (std::sqrt(second[i]) / std::sqrt(bias2) + eps);
        param[i] -= step[i];
      }
      if (o_.rigid) rotation = turned(rotation, {-step[0] / radius_, -step[1] / radius_, -step[2] / radius_});
      if (report && o_.progress) o_.progress(level, it, loss);
    }
    const double final_loss = detail::affine_loss(s, matrix(), translation(true), nullptr, 0, ncc, nullptr, nullptr);
    const auto m = matrix();
    const auto t = translation(false);
    return {at::tensor(std::vector<double>(m.begin(), m.end()), at::kDouble).view({3, 3}),
            at::tensor(std::vector<double>(t.begin(), t.end()), at::kDouble), final_loss};
  }

  // The loss's gradient along the rotation vector ω of exp([ω]×)·R at ω = 0, from its
  // gradient G along the matrix (row-major 3×3): ∂/∂ω_k = Σ G ∘ ([e_k]× R), in the first
  // three entries (the rest unused).
  static std::array<double, 9> rotation_gradient(const std::array<double, 9>& g, const std::array<double, 9>& r) {
    std::array<double, 9> out{};
    for (int k = 0; k < 3; ++k) {
      // Rows of [e_k]× R: (e_k × column j of R) for each j.
      const int a = (k + 1) % 3, b = (k + 2) % 3;
      double sum = 0;
      for (int j = 0; j < 3; ++j) {
        // ([e_k]× R)_{a j} = −R_{b j}, ([e_k]× R)_{b j} = R_{a j}, row k is 0.
        sum += g[a * 3 + j] * -r[b * 3 + j] + g[b * 3 + j] * r[a * 3 + j];
      }
      out[k] = sum;
    }
    return out;
  }

  // exp([ω]×)·R (Rodrigues' formula).
  static std::array<double, 9> turned(const std::array<double, 9>& r, const std::array<double, 3>& w) {
    const double angle = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    const double a = angle > 1e-12 ? std::sin(angle) / angle : 1.0;
    const double b = angle > 1e-12 ? (1 - std::cos(angle)) / (angle * angle) : 0.5;
    const double k[9] = {0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0};
    double e[9];
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        double kk = 0;
        for (int l = 0; l < 3; ++l) kk += k[i * 3 + l] * k[l * 3 + j];
        e[i * 3 + j] = (i == j ? 1.0 : 0.0) + a * k[i * 3 + j] + b * kk;
      }
    }
    std::array<double, 9> out{};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int l = 0; l < 3; ++l) out[i * 3 + j] += e[i * 3 + l] * r[l * 3 + j];
    return out;
  }

  // `samples` random points of n, one in each of `samples` equal runs of the point list
  // (jittered strides): in memory order, so that the moving image is read in order
  // rather than at random (at 2 mm a step took 4.6–5 ms with uniform draws, most of it
  // cache misses), and spread over the whole volume.
  at::Tensor stratified(int64_t n, int64_t samples) {
    const at::Tensor u = at::rand({samples}, generator_, at::kDouble);
    const at::Tensor start = at::arange(samples, at::kDouble) * (double(n) / double(samples));
    return (start + u * (double(n) / double(samples))).floor().clamp_max(double(n - 1)).to(at::kLong).contiguous();
  }

  struct LevelData {
    std::array<double, 12> to_index{};  // 3×4: world → moving voxel index (i, j, k)
    at::Tensor points;          // N×3 fixed world points minus c_f
    at::Tensor fixed;           // 1×N fixed intensities at those points
    at::Tensor moving;          // 1×1×D×H×W moving image
    at::Tensor moving_mask;     // 1×1×D×H×W, or undefined (no moving mask)
    at::Tensor fixed_parzen;    // N×32: with "mind" on the CPU, the fixed intensities' Parzen weights
    at::Tensor to_grid;         // 3×3: world → normalised sampling coordinates
    at::Tensor to_grid_offset;  // 3
  };
  std::vector<LevelData> levels_;
  at::Tensor c_f_;
  double radius_;
  const AffineOptions& o_;
  at::Generator generator_;
};

AffineFit::AffineFit(const std::vector<Level>& fixed, const std::vector<Level>& moving, const std::vector<Level>& fixed_mask,
                     const std::vector<Level>& moving_mask, at::Tensor c_f, double radius, const AffineOptions& o)
    : impl_(std::make_unique<Impl>(fixed, moving, fixed_mask, moving_mask, std::move(c_f), radius, o)) {}

AffineFit::~AffineFit() = default;

std::tuple<at::Tensor, at::Tensor, double> AffineFit::run(int level, const at::Tensor& m0, const at::Tensor& t0,
                                                          int64_t steps, bool report) {
  return impl_->run(level, m0, t0, steps, report);
}

}  // namespace autoreg::registration::detail
