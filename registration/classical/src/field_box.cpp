#include "autoreg/registration/field_box.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace autoreg::registration {

Box foreground_box(const at::Tensor& a, const at::Tensor& b, int64_t margin) {
  const at::Tensor mask = ((a > 0.02) | (b > 0.02)).squeeze(0).squeeze(0).cpu();
  Box box{};
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t n = mask.size(d);
    std::vector<int64_t> others;
    for (int64_t e = 0; e < 3; ++e) {
      if (e != d) others.push_back(e);
    }
    const at::Tensor where = mask.any(others[1]).any(others[0]).nonzero();
    if (where.numel() == 0) return {{{0, mask.size(0)}, {0, mask.size(1)}, {0, mask.size(2)}}};
    box[d] = {std::max<int64_t>(0, where.min().item<int64_t>() - margin),
              std::min<int64_t>(n, where.max().item<int64_t>() + 1 + margin)};
  }
  return box;
}

at::Tensor crop(const at::Tensor& t, const Box& box) {
  at::Tensor c = t;
  for (int d = 0; d < 3; ++d) c = c.slice(2 + d, box[d][0], box[d][1]);
  return c.contiguous();
}

at::Tensor uncrop_replicate(const at::Tensor& inside, const Box& box, at::IntArrayRef full) {
  return at::replication_pad3d(inside, {box[2][0], full[2] - box[2][1], box[1][0], full[1] - box[1][1],
                                        box[0][0], full[0] - box[0][1]});
}

namespace {

// Along one axis of the full grid: the coarse neighbours and weight of every full index
// (clamped to the box first: the face values continue outside it).
struct AxisTable {
  std::vector<int64_t> i0, i1;
  std::vector<float> w1;
  float scale = 1;  // full voxels per coarse voxel
};

AxisTable axis_table(int64_t full, int64_t begin, int64_t end, int64_t coarse) {
  AxisTable t;
  const int64_t n = end - begin;
  // upsample_trilinear3d's corner-aligned source position, in float as it computes it.
  const float step = n > 1 ? float(coarse - 1) / float(n - 1) : 0.f;
  t.scale = float(double(n - 1) / double(std::max<int64_t>(1, coarse - 1)));
  for (int64_t x = 0; x < full; ++x) {
    const int64_t inside = std::clamp<int64_t>(x - begin, 0, n - 1);
    const float p = step * float(inside);
    const int64_t i = std::min<int64_t>(int64_t(p), coarse - 1);
    t.i0.push_back(i);
    t.i1.push_back(std::min<int64_t>(i + 1, coarse - 1));
    t.w1.push_back(p - float(i));
  }
  return t;
}

// Trilinear sample of the three channels of `v` (D×H×W planes) at (z, y, x), clamped
// to the volume (ops' border padding), added to `out`.
inline void add_sample(const float* v, int64_t D, int64_t H, int64_t W, float z, float y, float x,
                       float out[3]) {
  const auto axis = [](float p, int64_t n, int64_t& i0, int64_t& i1, float& w1) {
    p = p > 0.f ? std::min(p, float(n - 1)) : 0.f;  // NaN (a diverged field) reads voxel 0
    i0 = std::min<int64_t>(int64_t(p), n - 1);
    i1 = std::min<int64_t>(i0 + 1, n - 1);
    w1 = p - float(i0);
  };
  int64_t z0, z1, y0, y1, x0, x1;
  float wz, wy, wx;
  axis(z, D, z0, z1, wz);
  axis(y, H, y0, y1, wy);
  axis(x, W, x0, x1, wx);
  const int64_t plane = D * H * W;
  const int64_t r00 = (z0 * H + y0) * W, r01 = (z0 * H + y1) * W;
  const int64_t r10 = (z1 * H + y0) * W, r11 = (z1 * H + y1) * W;
  const float a00 = (1 - wz) * (1 - wy), a01 = (1 - wz) * wy, a10 = wz * (1 - wy), a11 = wz * wy;
  for (int c = 0; c < 3; ++c, v += plane) {
    const auto row = [&](int64_t r) { return (1 - wx) * v[r + x0] + wx * v[r + x1]; };
    out[c] += a00 * row(r00) + a01 * row(r01) + a10 * row(r10) + a11 * row(r11);
  }
}

}  // namespace

at::Tensor expand_field(const at::Tensor& coarse_in, const Box& box, at::IntArrayRef full,
                        const at::Tensor& then_in) {
  const at::Tensor coarse = coarse_in.to(at::kCPU, at::kFloat).contiguous();
  TORCH_CHECK(coarse.dim() == 5 && coarse.size(0) == 1 && coarse.size(1) == 3 && full.size() == 3,
              "expand_field: coarse must be 1×3×D×H×W, got ", coarse.sizes());
  const int64_t D = full[0], H = full[1], W = full[2];
  at::Tensor then;
  if (then_in.defined()) {
    then = then_in.to(at::kCPU, at::kFloat).contiguous();
    TORCH_CHECK(then.dim() == 5 && then.size(1) == 3 && then.sizes().slice(2) == full,
                "expand_field: `then` must be 1×3×", full, ", got ", then.sizes());
  }
  std::array<AxisTable, 3> t;
  for (int d = 0; d < 3; ++d) t[d] = axis_table(full[d], box[d][0], box[d][1], coarse.size(2 + d));
  const int64_t cd = coarse.size(2), ch = coarse.size(3), cw = coarse.size(4);
  const int64_t cplane = cd * ch * cw, plane = D * H * W;
  at::Tensor out = at::empty({1, 3, D, H, W}, coarse.options());
  const float* c_ptr = coarse.data_ptr<float>();
  const float* then_ptr = then.defined() ? then.data_ptr<float>() : nullptr;
  float* o_ptr = out.data_ptr<float>();
  at::parallel_for(0, D * H, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> line(3 * cw);  // the coarse row at this (z, y), per channel
    for (int64_t r = begin; r < end; ++r) {
      const int64_t z = r / H, y = r % H;
      const float wz = t[0].w1[z], wy = t[1].w1[y];
      const int64_t rows[4] = {(t[0].i0[z] * ch + t[1].i0[y]) * cw, (t[0].i0[z] * ch + t[1].i1[y]) * cw,
                               (t[0].i1[z] * ch + t[1].i0[y]) * cw, (t[0].i1[z] * ch + t[1].i1[y]) * cw};
      const float a[4] = {(1 - wz) * (1 - wy), (1 - wz) * wy, wz * (1 - wy), wz * wy};
      for (int c = 0; c < 3; ++c) {
        const float* p = c_ptr + c * cplane;
        for (int64_t x = 0; x < cw; ++x) {
          line[c * cw + x] = t[c].scale * (a[0] * p[rows[0] + x] + a[1] * p[rows[1] + x] +
                                           a[2] * p[rows[2] + x] + a[3] * p[rows[3] + x]);
        }
      }
      float* o = o_ptr + r * W;
      for (int64_t x = 0; x < W; ++x) {
        const float wx = t[2].w1[x];
        const int64_t x0 = t[2].i0[x], x1 = t[2].i1[x];
        float v[3];
        for (int c = 0; c < 3; ++c) v[c] = (1 - wx) * line[c * cw + x0] + wx * line[c * cw + x1];
        float sum[3] = {v[0], v[1], v[2]};
        if (then_ptr) add_sample(then_ptr, D, H, W, float(z) + v[0], float(y) + v[1], float(x) + v[2], sum);
        for (int c = 0; c < 3; ++c) o[c * plane + x] = sum[c];
      }
    }
  });
  return out;
}

}  // namespace autoreg::registration
