#ifndef itkAutoRegImageRegistrationFilter_hxx
#define itkAutoRegImageRegistrationFilter_hxx

#include "itkAutoRegImageRegistrationFilter.h"

#include <itkCastImageFilter.h>
#include <itkProcessObject.h>

#include <exception>

#include "autoreg/pair/register_images.h"

namespace itk {

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::AutoRegImageRegistrationFilter()
    : m_Transform(TransformType::New()) {
  this->SetPrimaryInputName("FixedImage");
  this->AddRequiredInputName("MovingImage", 1);
  this->AddOptionalInputName("FixedImageMask", 2);
  this->AddOptionalInputName("MovingImageMask", 3);
  m_Padding = autoreg::pipeline::padding_text(m_Settings.padding);
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::SetPreset(const std::string& name) {
  try {
    autoreg::pipeline::apply_preset(name, m_Settings);  // what the preset does not name stays
  } catch (const std::exception& e) {
    itkExceptionMacro(<< e.what());
  }
  this->Modified();
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::SetSetting(const std::string& keyword,
                                                                                              const std::string& value) {
  if (keyword == "padding") return SetPadding(value);  // its text is read by Update(), as SetPadding's
  autoreg::pipeline::RegistrationSettings s = m_Settings;
  try {
    autoreg::pipeline::setting_row(keyword).set(s, value);
    if (keyword != "preset") autoreg::pipeline::mark_given(s, keyword);
  } catch (const std::exception& e) {
    itkExceptionMacro(<< e.what());
  }
  m_Settings = s;
  this->Modified();
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
std::string AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::GetSetting(
    const std::string& keyword) const {
  if (keyword == "padding") return m_Padding;
  try {
    return autoreg::pipeline::setting_row(keyword).get(m_Settings);
  } catch (const std::exception& e) {
    itkExceptionMacro(<< e.what());
  }
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
autoreg::pipeline::RegistrationSettings
AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::CurrentSettings() const {
  autoreg::pipeline::RegistrationSettings s = m_Settings;
  s.padding = autoreg::pipeline::parse_padding(m_Padding);
  return s;
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::GenerateInputRequestedRegion() {
  Superclass::GenerateInputRequestedRegion();
  if (auto* fixed = const_cast<FixedImageType*>(this->GetFixedImage())) {
    fixed->SetRequestedRegionToLargestPossibleRegion();
  }
  if (auto* moving = const_cast<MovingImageType*>(this->GetMovingImage())) {
    moving->SetRequestedRegionToLargestPossibleRegion();
  }
  for (auto* mask : {const_cast<MaskImageType*>(this->GetFixedImageMask()), const_cast<MaskImageType*>(this->GetMovingImageMask())}) {
    if (mask) mask->SetRequestedRegionToLargestPossibleRegion();
  }
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::EnlargeOutputRequestedRegion(
    DataObject* output) {
  Superclass::EnlargeOutputRequestedRegion(output);
  output->SetRequestedRegionToLargestPossibleRegion();
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::GenerateData() {
  using FloatImage = autoreg::pipeline::FloatImage3;
  // Any scalar pixel type: autoreg registers float intensities.
  auto as_float = [](const auto* image) {
    using InputImage = std::remove_const_t<std::remove_pointer_t<decltype(image)>>;
    auto cast = CastImageFilter<InputImage, FloatImage>::New();
    cast->SetInput(image);
    cast->Update();
    return typename FloatImage::Pointer(cast->GetOutput());
  };
  const typename FloatImage::Pointer fixed = as_float(this->GetFixedImage());
  const typename FloatImage::Pointer moving = as_float(this->GetMovingImage());
  const typename FloatImage::Pointer fixed_mask = this->GetFixedImageMask() ? as_float(this->GetFixedImageMask()) : nullptr;
  const typename FloatImage::Pointer moving_mask = this->GetMovingImageMask() ? as_float(this->GetMovingImageMask()) : nullptr;

  const autoreg::pipeline::RegistrationSettings settings = CurrentSettings();

  this->UpdateProgress(0.0f);
  autoreg::pipeline::PhysicalField3::Pointer field;
  try {
    field = autoreg::pipeline::register_images(fixed, moving, settings, [this](double done) {
      if (this->GetAbortGenerateData()) {
        ProcessAborted e(__FILE__, __LINE__);
        e.SetDescription("AutoRegImageRegistrationFilter: aborted");
        throw e;
      }
      this->UpdateProgress(static_cast<float>(done));
    }, fixed_mask.GetPointer(), moving_mask.GetPointer());
  } catch (const ExceptionObject&) {
    throw;
  } catch (const std::exception& e) {
    itkExceptionMacro(<< e.what());
  }

  // The field, converted to the output's vector type.
  this->AllocateOutputs();
  DisplacementFieldType* output = this->GetOutput();
  const auto* in = field->GetBufferPointer();
  auto* out = output->GetBufferPointer();
  const SizeValueType n = output->GetBufferedRegion().GetNumberOfPixels();
  for (SizeValueType v = 0; v < n; ++v) {
    for (unsigned int c = 0; c < 3; ++c) out[v][c] = static_cast<FieldValueType>(in[v][c]);
  }
  m_Transform->SetDisplacementField(output);
  m_Transform->Modified();  // on a rerun, the same field object holds new vectors
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::PrintSelf(std::ostream& os,
                                                                                              Indent indent) const {
  Superclass::PrintSelf(os, indent);
  // Every setting by its name in the settings table, as GetSetting gives it.
  for (const autoreg::pipeline::SettingRow& row : autoreg::pipeline::setting_rows()) {
    const std::string value = GetSetting(row.keyword);
    os << indent << row.keyword << ": " << (value.empty() ? "(none)" : value) << std::endl;
  }
  itkPrintSelfObjectMacro(Transform);
}

}  // namespace itk

#endif  // itkAutoRegImageRegistrationFilter_hxx
