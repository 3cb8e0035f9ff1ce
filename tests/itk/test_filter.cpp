// itk::AutoRegImageRegistrationFilter as an ITK developer uses it: ITK's standard object
// checks, the defaults of `autoreg register`, recovery of a known map on an oblique,
// anisotropic synthetic pair through ResampleImageFilter, any scalar pixel type,
// progress events, abort, and errors as ITK exceptions.
#include <gtest/gtest.h>

#include <itkCommand.h>
#include <itkImageRegionIteratorWithIndex.h>
#include <itkResampleImageFilter.h>
#include <itkTestingMacros.h>

#include <cmath>
#include <vector>

#include "autoreg/pair/register_images.h"
#include "autoreg/pair/register_pair.h"
#include "itkAutoRegImageRegistrationFilter.h"

namespace autoreg::test {
namespace {

using Point = itk::Point<double, 3>;

// A direction matrix: rotation by `angle` about the axis (ax, ay, az) (normalised here).
itk::Matrix<double, 3, 3> rotation(double angle, double ax, double ay, double az) {
  const double n = std::sqrt(ax * ax + ay * ay + az * az), a[3] = {ax / n, ay / n, az / n};
  const double c = std::cos(angle), s = std::sin(angle);
  const double cross[3][3] = {{0, -a[2], a[1]}, {a[2], 0, -a[0]}, {-a[1], a[0], 0}};
  itk::Matrix<double, 3, 3> r;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) r(i, k) = (i == k ? c : 0) + (1 - c) * a[i] * a[k] + s * cross[i][k];
  return r;
}

// The known map S from moving to fixed physical points: a rotation of 7° about an
// oblique axis through c, a translation, and a smooth bend of up to 1.5 mm. The moving
// image is the fixed scene seen through S, so a correct registration maps a fixed point
// x to a moving point y with S(y) = x.
Point known_map(const Point& q) {
  static const itk::Matrix<double, 3, 3> r = rotation(7.0 * M_PI / 180.0, 1, -2, 3);
  const double c[3] = {2, -4, 6}, t[3] = {4.0, -3.0, 2.5};
  Point p;
  for (int i = 0; i < 3; ++i) {
    p[i] = c[i] + t[i];
    for (int k = 0; k < 3; ++k) p[i] += r(i, k) * (q[k] - c[k]);
  }
  p[0] += 1.5 * std::sin((q[1] + 4) / 12.0);
  p[2] += 1.5 * std::cos((q[0] - 2) / 14.0);
  return p;
}

// The scene, in fixed physical space: a soft ellipsoid holding blobs of several sizes.
double scene(const Point& p) {
  const double c[3] = {2, -4, 6};
  const double e = std::pow((p[0] - c[0]) / 24, 2) + std::pow((p[1] - c[1]) / 28, 2) + std::pow((p[2] - c[2]) / 30, 2);
  double v = 0.3 / (1 + std::exp((e - 1) * 12));
  const double blobs[6][5] = {{-8, -10, 0, 5, 0.6}, {9, 2, 12, 4, 0.5},   {0, 12, -6, 6, 0.4},
                              {12, -14, 8, 3.5, 0.7}, {-6, 4, 18, 4.5, 0.5}, {4, -2, -12, 5, 0.6}};
  for (const auto& b : blobs) {
    const double d2 = std::pow(p[0] - c[0] - b[0], 2) + std::pow(p[1] - c[1] - b[1], 2) + std::pow(p[2] - c[2] - b[2], 2);
    v += b[4] * std::exp(-d2 / (2 * b[3] * b[3]));
  }
  return v;
}

template <typename ImageT>
typename ImageT::Pointer make_image(std::array<unsigned, 3> size, std::array<double, 3> spacing, Point origin,
                                    const itk::Matrix<double, 3, 3>& direction, double scale,
                                    Point (*to_scene)(const Point&)) {
  auto image = ImageT::New();
  typename ImageT::RegionType region;
  typename ImageT::SpacingType s;
  for (int a = 0; a < 3; ++a) {
    region.SetSize(a, size[a]);
    s[a] = spacing[a];
  }
  image->SetRegions(region);
  image->SetSpacing(s);
  image->SetOrigin(origin);
  image->SetDirection(direction);
  image->Allocate();
  for (itk::ImageRegionIteratorWithIndex<ImageT> it(image, region); !it.IsAtEnd(); ++it) {
    Point p;
    image->TransformIndexToPhysicalPoint(it.GetIndex(), p);
    it.Set(static_cast<typename ImageT::PixelType>(scale * scene(to_scene(p))));
  }
  return image;
}

Point identity_map(const Point& p) { return p; }

using FloatImage = itk::Image<float, 3>;
using Filter = itk::AutoRegImageRegistrationFilter<FloatImage, FloatImage>;

// The fixed image: 40×36×30 voxels of 1.5×2.0×2.5 mm, axes along an oblique rotation.
template <typename ImageT = FloatImage>
typename ImageT::Pointer fixed_image(double scale = 1.0) {
  const itk::Matrix<double, 3, 3> dir = rotation(0.4, 1, 2, 2);
  Point origin;
  // Centre the grid on the scene.
  const double half[3] = {0.5 * 39 * 1.5, 0.5 * 35 * 2.0, 0.5 * 29 * 2.5}, c[3] = {2, -4, 6};
  for (int i = 0; i < 3; ++i) {
    origin[i] = c[i];
    for (int k = 0; k < 3; ++k) origin[i] -= dir(i, k) * half[k];
  }
  return make_image<ImageT>({40, 36, 30}, {1.5, 2.0, 2.5}, origin, dir, scale, identity_map);
}

// The moving image: the scene through known_map, on another oblique, anisotropic grid
// (48×40×34 voxels of 1.3×1.8×2.1 mm).
template <typename ImageT = FloatImage>
typename ImageT::Pointer moving_image(double scale = 1.0) {
  const itk::Matrix<double, 3, 3> dir = rotation(-0.6, 3, -1, 2);
  Point origin;
  const double half[3] = {0.5 * 47 * 1.3, 0.5 * 39 * 1.8, 0.5 * 33 * 2.1}, c[3] = {-2, 0, 4};
  for (int i = 0; i < 3; ++i) {
    origin[i] = c[i];
    for (int k = 0; k < 3; ++k) origin[i] -= dir(i, k) * half[k];
  }
  return make_image<ImageT>({48, 40, 34}, {1.3, 1.8, 2.1}, origin, dir, scale, known_map);
}

// ITK's standard checks and every Set/Get pair with its documented default; the macros
// return EXIT_FAILURE from the enclosing function.
int exercise_object_methods() {
  auto filter = Filter::New();
  ITK_EXERCISE_BASIC_OBJECT_METHODS(filter, AutoRegImageRegistrationFilter, ImageToImageFilter);
  if (!filter->GetModelFileName().empty() || filter->GetDevice() != "cpu" || filter->GetSimilarity() != "ncc" ||
      filter->GetRegularization() != 1.0 || !filter->GetUseAffine() || !filter->GetUseDeformable() ||
      filter->GetNumberOfRefinementIterations() != 0 || filter->GetSeed() != 0 ||
      filter->GetNumberOfIterations()[0] != 70 || filter->GetNumberOfIterations()[1] != 20 ||
      filter->GetAffineNumberOfIterations()[0] != 150 || filter->GetAffineNumberOfIterations()[1] != 100) {
    std::cerr << "a default differs from the documented one" << std::endl;
    return EXIT_FAILURE;
  }
  const std::string model = "brain.autoreg", device = "cuda", similarity = "mind";
  filter->SetModelFileName(model);
  ITK_TEST_SET_GET_VALUE(model, filter->GetModelFileName());
  filter->SetDevice(device);
  ITK_TEST_SET_GET_VALUE(device, filter->GetDevice());
  filter->SetSimilarity(similarity);
  ITK_TEST_SET_GET_VALUE(similarity, filter->GetSimilarity());
  const std::string tv = "tv";
  filter->SetRegularizer(tv);
  ITK_TEST_SET_GET_VALUE(tv, filter->GetRegularizer());
  filter->SetRegularization(0.5);
  ITK_TEST_SET_GET_VALUE(0.5, filter->GetRegularization());
  const Filter::LevelIterationsType levels{9, 7, 3};
  filter->SetNumberOfIterations(levels);
  ITK_TEST_SET_GET_VALUE(levels, filter->GetNumberOfIterations());
  Filter::IterationsType iterations;
  iterations[0] = 7;
  iterations[1] = 3;
  filter->SetAffineNumberOfIterations(iterations);
  ITK_TEST_SET_GET_VALUE(iterations, filter->GetAffineNumberOfIterations());
  filter->SetNumberOfRefinementIterations(5u);
  ITK_TEST_SET_GET_VALUE(5u, filter->GetNumberOfRefinementIterations());
  filter->SetSeed(42u);
  ITK_TEST_SET_GET_VALUE(uint64_t{42}, filter->GetSeed());
  ITK_TEST_SET_GET_BOOLEAN(filter, UseAffine, false);
  ITK_TEST_SET_GET_BOOLEAN(filter, UseRigid, false);
  ITK_TEST_SET_GET_BOOLEAN(filter, UseFullResolution, false);
  filter->SetCompareFiner(2u);
  ITK_TEST_SET_GET_VALUE(2u, filter->GetCompareFiner());
  const std::string padding = "-1024";
  filter->SetPadding(padding);
  ITK_TEST_SET_GET_VALUE(padding, filter->GetPadding());
  filter->SetDiscreteSearchRadius(20.0);
  ITK_TEST_SET_GET_VALUE(20.0, filter->GetDiscreteSearchRadius());
  ITK_TEST_SET_GET_BOOLEAN(filter, UseDeformable, false);
  filter->SetNccWindow(6.0);
  ITK_TEST_SET_GET_VALUE(6.0, filter->GetNccWindow());
  ITK_TEST_EXPECT_TRUE(filter->GetUseAutomaticIntensityWindow());
  Filter::IntensityWindowType window;
  window[0] = -1000;
  window[1] = 1000;
  filter->SetIntensityWindow(window);
  ITK_TEST_SET_GET_VALUE(window, filter->GetIntensityWindow());
  ITK_TEST_EXPECT_TRUE(!filter->GetUseAutomaticIntensityWindow());
  filter->UseAutomaticIntensityWindow();
  ITK_TEST_EXPECT_TRUE(filter->GetUseAutomaticIntensityWindow());
  return EXIT_SUCCESS;
}

TEST(AutoRegFilter, PassesItksObjectChecks) { EXPECT_EQ(exercise_object_methods(), EXIT_SUCCESS); }

// The filter's defaults are register's: the library's option defaults.
TEST(AutoRegFilter, DefaultsAreThoseOfRegister) {
  const pipeline::ImageRegistrationSettings s;
  const pipeline::PairOptions o;
  EXPECT_EQ(std::vector<int64_t>(s.iterations.begin(), s.iterations.end()), o.deformable.iterations);
  EXPECT_EQ(std::vector<int64_t>(s.affine_iterations.begin(), s.affine_iterations.end()), o.affine.iterations);
  EXPECT_EQ(s.similarity, registration::similarity_name(o.deformable.similarity));
  EXPECT_EQ(s.similarity, registration::similarity_name(o.affine.similarity));
  EXPECT_EQ(s.regularization, o.deformable.regularization);
  EXPECT_EQ(s.regularizer, registration::regularizer_name(o.deformable.regularizer));
  EXPECT_EQ(s.device, o.device);
  EXPECT_EQ(s.seed, o.deformable.seed);
  EXPECT_EQ(int64_t(s.refine), o.refine);
  EXPECT_TRUE(s.model.empty() && !o.model);
}

// The presets: brain is the defaults; breathing turns the affine off, fits four levels
// and lets organs slide; an unknown name is a settings error listing the known ones.
TEST(RegistrationSettings, PresetsAreNamedSettings) {
  const pipeline::RegistrationSettings defaults, brain = pipeline::preset_settings("brain");
  EXPECT_EQ(brain.iterations, defaults.iterations);
  EXPECT_EQ(brain.affine, defaults.affine);
  EXPECT_EQ(brain.regularizer, defaults.regularizer);
  const pipeline::RegistrationSettings breathing = pipeline::preset_settings("breathing");
  EXPECT_FALSE(breathing.affine);
  EXPECT_EQ(breathing.iterations, (std::vector<unsigned>{140, 140, 70, 40}));
  EXPECT_EQ(breathing.regularizer, "tv");
  EXPECT_EQ(breathing.preset, "breathing");
  EXPECT_TRUE(breathing.full_resolution);
  EXPECT_EQ(breathing.regularization, 1.0);
  EXPECT_EQ(breathing.compare_finer, 2u);
  EXPECT_EQ(defaults.compare_finer, 0u);
  EXPECT_EQ(breathing.learning_rate, 0.4);
  EXPECT_NO_THROW(pipeline::validate(breathing));
  EXPECT_EQ(pipeline::presets().size(), 4u);
  EXPECT_EQ(defaults.preset, "auto");  // chosen from the images (preset_choice.h); brain's settings until then
  const pipeline::RegistrationSettings ct = pipeline::preset_settings("ct-cbct");
  EXPECT_TRUE(ct.affine && ct.rigid);
  EXPECT_EQ(ct.regularization, 4.0);
  EXPECT_EQ(ct.padding, pipeline::Padding{});
  EXPECT_NO_THROW(pipeline::validate(ct));
  try {
    pipeline::preset_settings("lung");
    ADD_FAILURE() << "an unknown preset was taken";
  } catch (const pipeline::SettingsError& e) {
    EXPECT_NE(std::string(e.what()).find("brain, breathing"), std::string::npos) << e.what();
  }
}

// SetPreset, as --preset: the preset's levels, pre-alignment, regulariser, weight, step and
// full resolution; the seed it does not name stays; setters after it override; an unknown
// name is an itk::ExceptionObject listing the known ones.
TEST(RegistrationFilter, SetPresetSetsThePresetsSettings) {
  auto filter = Filter::New();
  EXPECT_EQ(filter->GetPreset(), "auto");
  filter->SetSeed(5u);
  filter->SetPreset("breathing");
  EXPECT_EQ(filter->GetPreset(), "breathing");
  EXPECT_EQ(filter->GetNumberOfIterations(), (Filter::LevelIterationsType{140, 140, 70, 40}));
  EXPECT_FALSE(filter->GetUseAffine());
  EXPECT_EQ(filter->GetRegularizer(), "tv");
  EXPECT_EQ(filter->GetRegularization(), 1.0);
  EXPECT_EQ(filter->GetLearningRate(), 0.4);
  EXPECT_TRUE(filter->GetUseFullResolution());
  EXPECT_EQ(filter->GetCompareFiner(), 2u);
  EXPECT_EQ(filter->GetSeed(), 5u);
  filter->SetRegularizer("diffusion");
  EXPECT_EQ(filter->GetRegularizer(), "diffusion");
  try {
    filter->SetPreset("lung");
    ADD_FAILURE() << "an unknown preset was taken";
  } catch (const itk::ExceptionObject& e) {
    EXPECT_NE(std::string(e.GetDescription()).find("brain, breathing"), std::string::npos) << e.GetDescription();
  }
  EXPECT_EQ(filter->GetPreset(), "breathing");  // unchanged by the refused name
  EXPECT_EQ(filter->GetPadding(), "auto");
  filter->SetPreset("ct-cbct");
  EXPECT_TRUE(filter->GetUseRigid() && filter->GetUseAffine());
  EXPECT_EQ(filter->GetRegularization(), 4.0);
  EXPECT_EQ(filter->GetRegularizer(), "diffusion");
}

// Mean and largest distance |S(T(x)) − x| over fixed voxels inside the scene's
// ellipsoid, for the transform T the filter found (or the identity).
template <typename TransformT>
std::pair<double, double> map_error(const FloatImage* fixed, const TransformT* transform) {
  double sum = 0, worst = 0;
  int64_t n = 0;
  for (itk::ImageRegionConstIteratorWithIndex<FloatImage> it(fixed, fixed->GetLargestPossibleRegion()); !it.IsAtEnd();
       ++it) {
    if (it.Get() < 0.2) continue;  // inside the ellipsoid
    Point x;
    fixed->TransformIndexToPhysicalPoint(it.GetIndex(), x);
    Point y = x;
    if (transform) y.CastFrom(transform->TransformPoint(x));
    const double e = known_map(y).EuclideanDistanceTo(x);
    sum += e;
    worst = std::max(worst, e);
    ++n;
  }
  return {sum / double(n), worst};
}

TEST(AutoRegFilter, RecoversAKnownMapOnAnObliqueAnisotropicPair) {
  const FloatImage::Pointer fixed = fixed_image();
  const FloatImage::Pointer moving = moving_image();
  auto filter = Filter::New();
  filter->SetFixedImage(fixed);
  filter->SetMovingImage(moving);
  std::vector<float> progress;
  auto observer = itk::CStyleCommand::New();
  observer->SetClientData(&progress);
  observer->SetCallback([](itk::Object* caller, const itk::EventObject&, void* data) {
    static_cast<std::vector<float>*>(data)->push_back(static_cast<itk::ProcessObject*>(caller)->GetProgress());
  });
  filter->AddObserver(itk::ProgressEvent(), observer);
  filter->Update();

  // The output: a field on the fixed grid.
  const auto* field = filter->GetOutput();
  EXPECT_EQ(field->GetLargestPossibleRegion(), fixed->GetLargestPossibleRegion());
  EXPECT_EQ(field->GetDirection(), fixed->GetDirection());
  EXPECT_EQ(field->GetOrigin(), fixed->GetOrigin());
  EXPECT_EQ(field->GetSpacing(), fixed->GetSpacing());

  const auto before = map_error<Filter::TransformType>(fixed, nullptr);
  const auto after = map_error(fixed.GetPointer(), filter->GetTransform());
  std::cout << "mean |S(T(x)) - x|: identity " << before.first << " mm, autoreg " << after.first
            << " mm (largest " << before.second << " → " << after.second << " mm)" << std::endl;
  EXPECT_GT(before.first, 5.0);  // the map to recover is large...
  EXPECT_LT(after.first, 0.6);   // ...and recovered to well under a voxel (1.5-2.5 mm)
  EXPECT_LT(after.second, 2.5);

  // Progress: from 0 to 1, never backwards, step by step.
  ASSERT_GT(progress.size(), 100u);
  EXPECT_EQ(progress.front(), 0.0f);
  EXPECT_EQ(progress.back(), 1.0f);
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_GE(progress[i], progress[i - 1]);

  // ResampleImageFilter takes the transform as it is: the moving image comes onto the
  // fixed grid matching the fixed image.
  auto resample = itk::ResampleImageFilter<FloatImage, FloatImage>::New();
  resample->SetInput(moving);
  resample->SetTransform(filter->GetTransform());
  resample->UseReferenceImageOn();
  resample->SetReferenceImage(fixed);
  resample->Update();
  double err_before = 0, err_after = 0;
  int64_t n = 0;
  auto identity = itk::ResampleImageFilter<FloatImage, FloatImage>::New();
  identity->SetInput(moving);
  identity->UseReferenceImageOn();
  identity->SetReferenceImage(fixed);
  identity->Update();
  for (itk::ImageRegionConstIteratorWithIndex<FloatImage> it(fixed, fixed->GetLargestPossibleRegion()); !it.IsAtEnd();
       ++it) {
    if (it.Get() < 0.2) continue;
    err_after += std::abs(resample->GetOutput()->GetPixel(it.GetIndex()) - it.Get());
    err_before += std::abs(identity->GetOutput()->GetPixel(it.GetIndex()) - it.Get());
    ++n;
  }
  std::cout << "mean |moving - fixed| on the fixed grid: " << err_before / n << " → " << err_after / n << std::endl;
  EXPECT_LT(err_after, 0.2 * err_before);
}

// Integer pixels in, a float field out (ResampleImageFilter then takes a float transform).
TEST(AutoRegFilter, TakesAnyScalarPixelTypeAndFloatFields) {
  using ShortImage = itk::Image<short, 3>;
  using ByteImage = itk::Image<unsigned char, 3>;
  using FloatField = itk::Image<itk::Vector<float, 3>, 3>;
  auto filter = itk::AutoRegImageRegistrationFilter<ShortImage, ByteImage, FloatField>::New();
  const ShortImage::Pointer fixed = fixed_image<ShortImage>(1000.0);
  filter->SetFixedImage(fixed);
  filter->SetMovingImage(moving_image<ByteImage>(200.0));
  filter->UseDeformableOff();  // affine only: quick
  filter->Update();
  auto resample = itk::ResampleImageFilter<ByteImage, FloatImage, double, float>::New();
  resample->SetInput(filter->GetMovingImage());
  resample->SetTransform(filter->GetTransform());
  resample->UseReferenceImageOn();
  resample->SetReferenceImage(fixed);
  EXPECT_NO_THROW(resample->Update());
  // The affine alone already takes most of the map: within a few mm.
  const FloatImage::Pointer fixed_float = fixed_image();
  EXPECT_LT(map_error(fixed_float.GetPointer(), filter->GetTransform()).first, 2.5);
}

TEST(AutoRegFilter, AbortStopsTheRegistration) {
  auto filter = Filter::New();
  filter->SetFixedImage(fixed_image());
  filter->SetMovingImage(moving_image());
  auto observer = itk::CStyleCommand::New();
  observer->SetCallback([](itk::Object* caller, const itk::EventObject&, void*) {
    auto* f = static_cast<itk::ProcessObject*>(caller);
    if (f->GetProgress() > 0.1f) f->AbortGenerateDataOn();
  });
  filter->AddObserver(itk::ProgressEvent(), observer);
  EXPECT_THROW(filter->Update(), itk::ProcessAborted);
  EXPECT_LT(filter->GetProgress(), 0.2f);
}

// Masks: the fixed image's ellipsoid with its edge (> 0.01) as the fixed mask still recovers the map, as
// register_images does with the same mask; a mask off its image's grid is refused.
TEST(AutoRegFilter, TakesMasksOnTheImagesGrids) {
  using Mask = Filter::MaskImageType;
  const FloatImage::Pointer fixed = fixed_image();
  const auto mask_of = [](const FloatImage* image, double threshold) {
    auto mask = Mask::New();
    mask->CopyInformation(image);
    mask->SetRegions(image->GetLargestPossibleRegion());
    mask->Allocate();
    itk::ImageRegionConstIteratorWithIndex<FloatImage> in(image, image->GetLargestPossibleRegion());
    for (; !in.IsAtEnd(); ++in) mask->SetPixel(in.GetIndex(), in.Get() > threshold ? 1 : 0);
    return mask;
  };
  const Mask::Pointer mask = mask_of(fixed, 0.01);
  auto filter = Filter::New();
  filter->SetFixedImage(fixed);
  filter->SetMovingImage(moving_image());
  filter->SetFixedImageMask(mask);
  filter->Update();
  EXPECT_LT(map_error(fixed.GetPointer(), filter->GetTransform()).first, 1.0);
  // Off the grid: the moving image's mask given as the fixed one.
  auto other = Filter::New();
  other->SetFixedImage(fixed);
  other->SetMovingImage(moving_image());
  other->SetFixedImageMask(mask_of(moving_image().GetPointer(), 0.01));
  try {
    other->Update();
    ADD_FAILURE() << "a mask off its image's grid was taken";
  } catch (const itk::ExceptionObject& e) {
    EXPECT_NE(std::string(e.GetDescription()).find("fixed image mask: not on the grid"), std::string::npos)
        << e.GetDescription();
  }
}

// The NCC window and the intensity window reach the registration (the filter holds the
// whole settings struct): its field is register_images' with the same settings, and
// not the defaults'.
TEST(AutoRegFilter, NccWindowAndIntensityWindowReachTheRegistration) {
  const FloatImage::Pointer fixed = fixed_image(), moving = moving_image();
  pipeline::RegistrationSettings s;
  s.iterations = {20, 10};
  s.affine_iterations = {30, 20};
  s.ncc_window_mm = 9;
  s.intensity_window = std::array<double, 2>{0.0, 0.8};
  auto filter = Filter::New();
  filter->SetFixedImage(fixed);
  filter->SetMovingImage(moving);
  filter->SetNumberOfIterations({20, 10});
  Filter::IterationsType affine;
  affine[0] = 30;
  affine[1] = 20;
  filter->SetAffineNumberOfIterations(affine);
  filter->SetNccWindow(9.0);
  Filter::IntensityWindowType window;
  window[0] = 0.0;
  window[1] = 0.8;
  filter->SetIntensityWindow(window);
  filter->Update();
  const auto same = [](const Filter::DisplacementFieldType* a, const pipeline::PhysicalField3* b) {
    const auto n = a->GetBufferedRegion().GetNumberOfPixels();
    for (itk::SizeValueType v = 0; v < n; ++v) {
      for (unsigned c = 0; c < 3; ++c) {
        if (a->GetBufferPointer()[v][c] != b->GetBufferPointer()[v][c]) return false;
      }
    }
    return true;
  };
  EXPECT_TRUE(same(filter->GetOutput(), pipeline::register_images(fixed, moving, s)));
  s.ncc_window_mm = 0;
  s.intensity_window.reset();
  EXPECT_FALSE(same(filter->GetOutput(), pipeline::register_images(fixed, moving, s)));
}

// Errors reach the caller as ITK exceptions with autoreg's message.
TEST(AutoRegFilter, ReportsBadSettingsAsItkExceptions) {
  const auto message_of = [](Filter* filter) -> std::string {
    try {
      filter->Update();
    } catch (const itk::ExceptionObject& e) {
      return e.GetDescription();
    }
    return "(no exception)";
  };
  auto filter = Filter::New();
  filter->SetFixedImage(fixed_image());
  EXPECT_NE(message_of(filter).find("MovingImage"), std::string::npos) << message_of(filter);
  filter->SetMovingImage(moving_image());
  filter->SetSimilarity("mutual-information");
  EXPECT_NE(message_of(filter).find("mutual-information"), std::string::npos);
  filter->SetSimilarity("ncc");
  filter->SetModelFileName("/no/such/model.autoreg");
  EXPECT_NE(message_of(filter).find("/no/such/model.autoreg"), std::string::npos) << message_of(filter);
  filter->SetModelFileName("");
  filter->SetNumberOfRefinementIterations(3);
  EXPECT_NE(message_of(filter).find("need a model"), std::string::npos) << message_of(filter);
}

}  // namespace
}  // namespace autoreg::test
