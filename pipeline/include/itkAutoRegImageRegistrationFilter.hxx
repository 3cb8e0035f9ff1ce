#ifndef itkAutoRegImageRegistrationFilter_hxx
#define itkAutoRegImageRegistrationFilter_hxx

#include "itkAutoRegImageRegistrationFilter.h"

#include <itkCastImageFilter.h>
#include <itkProcessObject.h>

#include <exception>

#include "autoreg/pipeline/register_images.h"

namespace itk {

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::AutoRegImageRegistrationFilter()
    : m_Transform(TransformType::New()) {
  this->SetPrimaryInputName("FixedImage");
  this->AddRequiredInputName("MovingImage", 1);
  this->AddOptionalInputName("FixedImageMask", 2);
  this->AddOptionalInputName("MovingImageMask", 3);
  UseSettings(autoreg::pipeline::ImageRegistrationSettings{});
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::UseSettings(
    const autoreg::pipeline::RegistrationSettings& s) {
  m_Preset = s.preset;
  m_ModelFileName = s.model;
  m_Device = s.device;
  m_NumberOfIterations = s.iterations;
  for (unsigned int level = 0; level < 2; ++level) m_AffineNumberOfIterations[level] = s.affine_iterations[level];
  m_NumberOfRefinementIterations = s.refine;
  m_Similarity = s.similarity;
  m_Regularizer = s.regularizer;
  m_Regularization = s.regularization;
  m_LearningRate = s.learning_rate;
  m_UseFullResolution = s.full_resolution;
  m_CompareFiner = s.compare_finer;
  m_UseRigid = s.rigid;
  m_UseAffine = s.affine;
  m_UseDeformable = s.deformable;
  m_Seed = s.seed;
  m_Padding = autoreg::pipeline::padding_text(s.padding);
  m_DiscreteSearchRadius = s.discrete_mm;
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
void AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::SetPreset(const std::string& name) {
  autoreg::pipeline::RegistrationSettings s = CurrentSettings();
  try {
    autoreg::pipeline::apply_preset(name, s);  // what the preset does not name stays
  } catch (const std::exception& e) {
    itkExceptionMacro(<< e.what());
  }
  UseSettings(s);
  this->Modified();
}

template <typename TFixedImage, typename TMovingImage, typename TDisplacementField>
autoreg::pipeline::RegistrationSettings
AutoRegImageRegistrationFilter<TFixedImage, TMovingImage, TDisplacementField>::CurrentSettings() const {
  autoreg::pipeline::RegistrationSettings s;
  s.preset = m_Preset;
  s.model = m_ModelFileName;
  s.device = m_Device;
  s.affine = m_UseAffine;
  s.rigid = m_UseRigid;
  s.full_resolution = m_UseFullResolution;
  s.compare_finer = m_CompareFiner;
  s.deformable = m_UseDeformable;
  s.similarity = m_Similarity;
  s.regularizer = m_Regularizer;
  s.regularization = m_Regularization;
  s.learning_rate = m_LearningRate;
  s.iterations = m_NumberOfIterations;
  for (unsigned int level = 0; level < 2; ++level) s.affine_iterations[level] = m_AffineNumberOfIterations[level];
  s.refine = m_NumberOfRefinementIterations;
  s.seed = m_Seed;
  s.padding = autoreg::pipeline::parse_padding(m_Padding);
  s.discrete_mm = m_DiscreteSearchRadius;
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
  os << indent << "ModelFileName: " << (m_ModelFileName.empty() ? "(none: instance optimisation)" : m_ModelFileName)
     << std::endl;
  os << indent << "Device: " << m_Device << std::endl;
  os << indent << "Preset: " << m_Preset << std::endl;
  os << indent << "NumberOfIterations: " << autoreg::pipeline::counts_text(m_NumberOfIterations) << std::endl;
  os << indent << "AffineNumberOfIterations: " << m_AffineNumberOfIterations << std::endl;
  os << indent << "NumberOfRefinementIterations: " << m_NumberOfRefinementIterations << std::endl;
  os << indent << "Similarity: " << m_Similarity << std::endl;
  os << indent << "Regularizer: " << m_Regularizer << std::endl;
  os << indent << "Regularization: " << m_Regularization << std::endl;
  os << indent << "LearningRate: " << m_LearningRate << std::endl;
  os << indent << "UseFullResolution: " << (m_UseFullResolution ? "On" : "Off") << std::endl;
  os << indent << "CompareFiner: " << m_CompareFiner << std::endl;
  os << indent << "UseRigid: " << (m_UseRigid ? "On" : "Off") << std::endl;
  os << indent << "UseAffine: " << (m_UseAffine ? "On" : "Off") << std::endl;
  os << indent << "UseDeformable: " << (m_UseDeformable ? "On" : "Off") << std::endl;
  os << indent << "Seed: " << m_Seed << std::endl;
  os << indent << "Padding: " << m_Padding << std::endl;
  os << indent << "DiscreteSearchRadius: " << m_DiscreteSearchRadius << std::endl;
  itkPrintSelfObjectMacro(Transform);
}

}  // namespace itk

#endif  // itkAutoRegImageRegistrationFilter_hxx
