// ITK's own resampling, the reference the interoperability tests compare against.
#pragma once

#include <ATen/ATen.h>
#include <itkImageFileReader.h>
#include <itkLinearInterpolateImageFunction.h>
#include <itkResampleImageFilter.h>
#include <itkTransform.h>

#include <cstring>
#include <string>

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

}  // namespace autoreg::test
