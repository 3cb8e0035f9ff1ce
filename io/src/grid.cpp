#include "autoreg/io/grid.h"

#include <ATen/ATen.h>
#include <itkIdentityTransform.h>
#include <itkLinearInterpolateImageFunction.h>
#include <itkNearestNeighborInterpolateImageFunction.h>
#include <itkResampleImageFilter.h>

#include <cmath>

#include "itk_bridge.h"

namespace autoreg::io {
namespace {

using namespace detail;

template <typename Pixel>
Volume resample_as(const Volume& v, const Geometry& ref, Resampling how, at::ScalarType dtype) {
  using Image = itk::Image<Pixel, 3>;
  const auto input = to_itk<Pixel>(v);
  typename Image::SizeType size;
  typename Image::SpacingType spacing;
  typename Image::PointType origin;
  typename Image::DirectionType direction;
  for (int a = 0; a < 3; ++a) {
    size[a] = static_cast<itk::SizeValueType>(ref.size[a]);
    spacing[a] = ref.spacing[a];
    origin[a] = ref.origin[a];
    for (int c = 0; c < 3; ++c) direction(a, c) = ref.direction[a * 3 + c];
  }
  auto filter = itk::ResampleImageFilter<Image, Image, double>::New();
  filter->SetInput(input);
  filter->SetTransform(itk::IdentityTransform<double, 3>::New());
  if (how == Resampling::Nearest) {
    filter->SetInterpolator(itk::NearestNeighborInterpolateImageFunction<Image, double>::New());
  } else {
    filter->SetInterpolator(itk::LinearInterpolateImageFunction<Image, double>::New());
  }
  filter->SetSize(size);
  filter->SetOutputSpacing(spacing);
  filter->SetOutputOrigin(origin);
  filter->SetOutputDirection(direction);
  filter->SetDefaultPixelValue(0);
  filter->Update();
  return from_itk<Pixel>(filter->GetOutput(), dtype);
}

}  // namespace

bool same_grid(const Geometry& a, const Geometry& b, double tolerance) {
  if (a.size != b.size) return false;
  for (int i = 0; i < 3; ++i) {
    if (std::abs(a.spacing[i] - b.spacing[i]) > tolerance) return false;
    if (std::abs(a.origin[i] - b.origin[i]) > tolerance) return false;
  }
  for (int i = 0; i < 9; ++i) {
    if (std::abs(a.direction[i] - b.direction[i]) > tolerance) return false;
  }
  return true;
}

Volume resample(const Volume& volume, const Geometry& reference, Resampling how) {
  if (same_grid(volume.geometry, reference)) return {volume.data, reference};
  const at::ScalarType t = volume.data.scalar_type();
  TORCH_CHECK(t == at::kFloat || t == at::kInt, "resample: volume data must be float32 or int32, got ", t);
  return t == at::kFloat ? resample_as<float>(volume, reference, how, t)
                         : resample_as<int32_t>(volume, reference, how, t);
}

at::Tensor normalize_intensity(const at::Tensor& data, double lower_percent, double upper_percent) {
  TORCH_CHECK(0 <= lower_percent && lower_percent < upper_percent && upper_percent <= 100,
              "normalize_intensity: need 0 <= lower < upper <= 100, got ", lower_percent, ", ",
              upper_percent);
  const at::Tensor flat = data.reshape({-1}).to(at::kFloat);
  if (flat.numel() == 0) return data.to(at::kFloat);
  // Percentiles by sorting a subsample: exact enough for scaling, fast on 10^7 voxels.
  const int64_t step = std::max<int64_t>(1, flat.numel() / 1000000);
  const at::Tensor sorted = std::get<0>(flat.slice(0, 0, flat.numel(), step).sort());
  const auto at_percent = [&](double p) {
    const int64_t i = std::llround(p / 100.0 * double(sorted.numel() - 1));
    return sorted[i].item<double>();
  };
  const double lo = at_percent(lower_percent), hi = at_percent(upper_percent);
  if (hi <= lo) return at::zeros_like(flat).view(data.sizes());  // constant image
  return ((data.to(at::kFloat) - lo) / (hi - lo)).clamp(0.0, 1.0);
}

}  // namespace autoreg::io
