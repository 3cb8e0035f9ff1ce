// An ITK pipeline with autoreg in it:
//   reader → itk::AutoRegImageRegistrationFilter → ResampleImageFilter (its transform) → writer
//
//   itk_pipeline FIXED MOVING OUT_WARPED [MODEL]
//
// MODEL: an .autoreg file, or "default" for the model shipped with autoreg; without it,
// instance optimisation. OUT_WARPED: the moving image resampled onto the fixed grid
// (float32), as `autoreg register --out-warped` writes it.
#include <itkCommand.h>
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkLinearInterpolateImageFunction.h>
#include <itkResampleImageFilter.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "itkAutoRegImageRegistrationFilter.h"

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: %s FIXED MOVING OUT_WARPED [MODEL|default]\n", argv[0]);
    return EXIT_FAILURE;
  }
  using Image = itk::Image<float, 3>;
  using Registration = itk::AutoRegImageRegistrationFilter<Image, Image>;

  try {
    auto fixed = itk::ImageFileReader<Image>::New();
    fixed->SetFileName(argv[1]);
    auto moving = itk::ImageFileReader<Image>::New();
    moving->SetFileName(argv[2]);

    auto registration = Registration::New();
    registration->SetFixedImage(fixed->GetOutput());
    registration->SetMovingImage(moving->GetOutput());
    if (argc == 5) registration->SetModelFileName(argv[4]);
    // Progress, as any ITK filter reports it.
    auto progress = itk::CStyleCommand::New();
    progress->SetCallback([](itk::Object* caller, const itk::EventObject&, void*) {
      const auto* filter = static_cast<itk::ProcessObject*>(caller);
      std::fprintf(stderr, "\rregistering: %3.0f %%", 100.0 * filter->GetProgress());
    });
    registration->AddObserver(itk::ProgressEvent(), progress);
    registration->Update();
    std::fprintf(stderr, "\n");

    // The moving image on the fixed grid, through the filter's transform.
    auto resample = itk::ResampleImageFilter<Image, Image>::New();
    resample->SetInput(moving->GetOutput());
    resample->SetTransform(registration->GetTransform());
    resample->SetInterpolator(itk::LinearInterpolateImageFunction<Image, double>::New());
    resample->UseReferenceImageOn();
    resample->SetReferenceImage(fixed->GetOutput());
    resample->SetDefaultPixelValue(0);

    auto writer = itk::ImageFileWriter<Image>::New();
    writer->SetFileName(argv[3]);
    writer->SetInput(resample->GetOutput());
    writer->SetUseCompression(true);
    writer->Update();
  } catch (const itk::ExceptionObject& e) {
    std::fprintf(stderr, "itk_pipeline: %s\n", e.GetDescription());
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
