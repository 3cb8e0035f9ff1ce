// CPU kernel of autoreg::_warp_mse: the mean squared difference between a warped image
// and a target, and its gradient with respect to the displacement, in one pass.
//
// Instance optimisation compares MIND-SSC descriptors (12 channels) by their mean
// squared difference. Through warp's autograd that is a forward warp writing 12 warped
// channels, the difference, its square and mean, their backward passes, and warp's
// backward reading the 12 channels' neighbours a second time. Here each voxel's 8
// neighbours are read once per channel and give the sample, its difference to the target
// and the derivatives of the trilinear form together. On the T1 -> T2 pair
// (docs/performance.md) the deformable stage went from 6.3 s to 3.6 s on 2 threads.
//
// Per-row sums of the loss are kept and added in row order afterwards, so the loss does
// not depend on the thread count; the gradient is written voxel by voxel.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "../args.h"
#include "autoreg/ops.h"
#include "neighbours.h"

namespace autoreg::ops::detail {
namespace {

template <typename T, Pad P>
double warp_mse_linear(const Grid& g, const T* img, const T* target, const T* disp, const T* weight,
                       double scale, T* gdisp) {
  const int64_t plane = g.plane();
  std::vector<double> row_sums(size_t(g.N * g.D * g.H), 0.0);
  const T two_scale = T(2 * scale);  // d/du of Σ_c diff² is 2 Σ_c diff ∂sample/∂u, over C·Σ weight
  for_each_row(g, [&](int64_t n, int64_t d, int64_t h, int) {
    const int64_t row = (d * g.H + h) * g.W;
    const T* u = disp + n * 3 * plane + row;
    const T* src_n = img + n * g.C * plane;
    const T* tgt_n = target + n * g.C * plane + row;
    const T* w_n = weight ? weight + n * plane + row : nullptr;
    double row_sum = 0;
    LinearBlock<T, true> b;
    for (int64_t w0 = 0; w0 < g.W; w0 += kBlock) {
      const int32_t len = static_cast<int32_t>(std::min<int64_t>(kBlock, g.W - w0));
      setup_linear<T, P, true>(g, u + w0, u + plane + w0, u + 2 * plane + w0, d, h, w0, len, b);
      alignas(64) T acc[3][kBlock];
      for (int32_t j = 0; j < len; ++j) {
        const VoxelWeights<T> v(b, j);
        T sq = 0, sd = 0, sh = 0, sw = 0;
        const T* src = src_n;
        const T* tgt = tgt_n + w0 + j;
        for (int64_t c = 0; c < g.C; ++c, src += plane, tgt += plane) {
          const Trilinear<T> t = trilinear(src, v);
          const T diff = t.value - *tgt;
          sq += diff * diff;
          sd += diff * t.d;
          sh += diff * t.h;
          sw += diff * t.w;
        }
        const T wx = w_n ? w_n[w0 + j] : T(1);
        row_sum += double(wx * sq);
        const T k = two_scale * wx;
        acc[0][j] = k * sd;
        acc[1][j] = k * sh;
        acc[2][j] = k * sw;
      }
      if (gdisp) {
        T* out = gdisp + n * 3 * plane + row + w0;
        for (int a = 0; a < 3; ++a) std::copy(acc[a], acc[a] + len, out + a * plane);
      }
    }
    row_sums[size_t((n * g.D + d) * g.H + h)] = row_sum;
  });
  double total = 0;
  for (double s : row_sums) total += s;
  return total * scale;
}

std::tuple<at::Tensor, at::Tensor> warp_mse_cpu(const at::Tensor& image, const at::Tensor& target,
                                                const at::Tensor& displacement,
                                                const std::optional<at::Tensor>& weight,
                                                c10::string_view padding, bool with_grad) {
  const char* op = "autoreg::_warp_mse";
  const WarpSpec spec = check_warp_args(op, image, displacement, "linear", padding);
  check_volume(op, "target", target, image.size(1));
  check_compatible(op, "target", target, "displacement", displacement);
  const bool weighted = weight.has_value() && weight->defined();
  if (weighted) {
    check_volume(op, "weight", *weight, 1);
    check_compatible(op, "weight", *weight, "displacement", displacement);
  }
  const at::Tensor img = image.contiguous(), tgt = target.contiguous(), disp = displacement.contiguous();
  const at::Tensor w = weighted ? weight->contiguous() : at::Tensor();
  at::Tensor grad = with_grad ? at::empty(disp.sizes(), disp.options()) : at::Tensor();
  const Grid g = grid_of(img);
  double loss = 0;
  if (img.numel() > 0) {
    // The mean over channels and voxels, or over channels and the weight's voxels (ε: an
    // empty weight gives 0, not NaN), as registration::similarity_loss.
    const double denom = weighted ? w.sum().item<double>() + kEmptyWeight : double(g.N * g.plane());
    const double scale = 1.0 / (double(g.C) * denom);
    AT_DISPATCH_FLOATING_TYPES(img.scalar_type(), "autoreg::_warp_mse", [&] {
      const scalar_t* wp = weighted ? w.data_ptr<scalar_t>() : nullptr;
      scalar_t* gp = with_grad ? grad.data_ptr<scalar_t>() : nullptr;
      with_padding(spec.pad, [&](auto pad) {
        loss = warp_mse_linear<scalar_t, decltype(pad)::value>(g, img.data_ptr<scalar_t>(), tgt.data_ptr<scalar_t>(),
                                                               disp.data_ptr<scalar_t>(), wp, scale, gp);
      });
    });
  } else if (with_grad) {
    grad.zero_();
  }
  return {at::scalar_tensor(loss, img.options()), grad};
}

}  // namespace

TORCH_LIBRARY_IMPL(autoreg, CPU, m) { m.impl("_warp_mse", &warp_mse_cpu); }

}  // namespace autoreg::ops::detail
