// ITK's own resampling, the reference the interoperability tests compare against.
#pragma once

#include <ATen/ATen.h>
#include <itkImageFileReader.h>
#include <itkLinearInterpolateImageFunction.h>
#include <itkResampleImageFilter.h>
#include <itkTransform.h>

#include <cstring>
#include <string>
#include <vector>

namespace autoreg::test {

// The image of `image_file` resampled by itk::ResampleImageFilter through `transform`
// (fixed point x ↦ moving point T(x)) onto its own grid, trilinear, 0 outside; as a
// 1×1×D×H×W tensor.
inline at::Tensor itk_resample(const std::string& image_file, const itk::Transform<double, 3, 3>* transform) {
  using Image = itk::Image<float, 3>;
  const Image::Pointer image = itk::ReadImage<Image>(image_file);
  auto resample = itk::ResampleImageFilter<Image, Image, double>::New();
  resample->SetInput(image);
  resample->SetTransform(transform);
  resample->SetInterpolator(itk::LinearInterpolateImageFunction<Image, double>::New());
  resample->SetUseReferenceImage(true);
  resample->SetReferenceImage(image);
  resample->SetDefaultPixelValue(0);
  resample->Update();
  const auto size = image->GetLargestPossibleRegion().GetSize();
  at::Tensor out = at::empty({1, 1, int64_t(size[2]), int64_t(size[1]), int64_t(size[0])});
  std::memcpy(out.data_ptr(), resample->GetOutput()->GetBufferPointer(), out.nbytes());
  return out;
}

// Voxels x whose sample point x + u(x) (u: 1×3×D×H×W voxel displacement) lies inside
// the volume with a voxel to spare, 1×1×D×H×W: where to compare with ITK, which clamps
// neighbours at the very edge where zeros padding blends with zero.
inline at::Tensor inside_with_margin(const at::Tensor& u) {
  at::Tensor inside = at::ones({1, 1, u.size(2), u.size(3), u.size(4)}, at::kBool);
  for (int c = 0; c < 3; ++c) {
    const int64_t n = u.size(2 + c);
    std::vector<int64_t> shape = {1, 1, 1};
    shape[c] = n;
    const at::Tensor p = u.select(1, c).unsqueeze(1) + at::arange(n, at::kFloat).view(shape);
    inside = inside & (p >= 1) & (p <= n - 2);
  }
  return inside;
}

}  // namespace autoreg::test
