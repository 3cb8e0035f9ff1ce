// An ITK filter that registers a moving image to a fixed image with autoreg.
#ifndef itkAutoRegImageRegistrationFilter_h
#define itkAutoRegImageRegistrationFilter_h

#include <itkDisplacementFieldTransform.h>
#include <itkFixedArray.h>
#include <itkImage.h>
#include <itkImageToImageFilter.h>
#include <itkVector.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "autoreg/pair/registration_settings.h"

// A setting of the filter's RegistrationSettings with its Set/Get: the comparison and
// Modified() of itkSetMacro without its debug message, which streams the value (a
// std::vector has no operator<<: the macro failed to compile wherever NDEBUG was not
// defined, a user's Debug build).
#define autoregFilterSettingMacro(name, type, field)    \
  virtual void Set##name(const type& value) {           \
    autoreg::pipeline::mark_given(m_Settings, #field);  \
    if (m_Settings.field == value) return;              \
    m_Settings.field = value;                        \
    this->Modified();                                \
  }                                                  \
  virtual const type& Get##name() const { return m_Settings.field; }

namespace itk {

/** \class AutoRegImageRegistrationFilter
 * \brief Deformable registration of a moving image to a fixed image by autoreg: affine
 * pre-alignment in physical space, then a deformable field predicted by a trained
 * network (SetModelFileName) or, without a model, optimised on the pair (instance
 * optimisation of a diffeomorphic field).
 *
 * Inputs: the fixed image (SetFixedImage, the primary input) and the moving image
 * (SetMovingImage), 3-D images of any scalar pixel type on any grid (origin, spacing,
 * direction). The whole of both images is used.
 *
 * Output: the displacement field d on the fixed image's grid, in millimetres in ITK's
 * physical (LPS) frame, affine and deformable parts together: the fixed point x maps
 * to the moving point x + d(x). GetTransform() returns a DisplacementFieldTransform
 * holding that field, which itk::ResampleImageFilter uses directly to bring the moving
 * image onto the fixed grid. This is what `autoreg register` computes and writes with
 * --out-field; for the same images and settings the two give the same field.
 *
 * Progress is reported through ProgressEvent (the fraction of optimisation steps done);
 * AbortGenerateData stops the registration at the next step.
 *
 * Threads: LibTorch's intra-op thread pool (all cores unless OMP_NUM_THREADS or
 * at::set_num_threads says otherwise).
 *
 * \ingroup AutoReg
 */
template <typename TFixedImage, typename TMovingImage = TFixedImage,
          typename TDisplacementField = Image<Vector<double, 3>, 3>>
class AutoRegImageRegistrationFilter : public ImageToImageFilter<TFixedImage, TDisplacementField> {
 public:
  ITK_DISALLOW_COPY_AND_MOVE(AutoRegImageRegistrationFilter);

  using Self = AutoRegImageRegistrationFilter;
  using Superclass = ImageToImageFilter<TFixedImage, TDisplacementField>;
  using Pointer = SmartPointer<Self>;
  using ConstPointer = SmartPointer<const Self>;

  using FixedImageType = TFixedImage;
  using MovingImageType = TMovingImage;
  using DisplacementFieldType = TDisplacementField;
  using VectorType = typename DisplacementFieldType::PixelType;
  using FieldValueType = typename VectorType::ValueType;
  using TransformType = DisplacementFieldTransform<FieldValueType, 3>;
  using IterationsType = FixedArray<unsigned int, 2>;
  /** Instance optimisation's steps per pyramid level, coarse to fine (1 to 6 levels). */
  using LevelIterationsType = std::vector<unsigned int>;

  static_assert(TFixedImage::ImageDimension == 3 && TMovingImage::ImageDimension == 3,
                "autoreg registers 3-D images");
  static_assert(std::is_same<DisplacementFieldType, typename TransformType::DisplacementFieldType>::value,
                "the displacement field must be an Image<Vector<T, 3>, 3>");

  itkNewMacro(Self);
  itkTypeMacro(AutoRegImageRegistrationFilter, ImageToImageFilter);

  /** The fixed image: the output field lives on its grid. */
  itkSetInputMacro(FixedImage, FixedImageType);
  itkGetInputMacro(FixedImage, FixedImageType);

  /** The moving image: the image that the field brings onto the fixed grid. */
  itkSetInputMacro(MovingImage, MovingImageType);
  itkGetInputMacro(MovingImage, MovingImageType);

  /** Optional masks (cost-function masking, as ANTs' -x and elastix's -fMask/-mMask):
   * binary images, non-zero inside, each on its image's grid. Only fixed voxels inside the
   * fixed mask whose match lies inside the moving mask are compared, in the affine stage,
   * instance optimisation and the refinement; the field covers the whole fixed grid. */
  using MaskImageType = Image<unsigned char, 3>;
  itkSetInputMacro(FixedImageMask, MaskImageType);
  itkGetInputMacro(FixedImageMask, MaskImageType);
  itkSetInputMacro(MovingImageMask, MaskImageType);
  itkGetInputMacro(MovingImageMask, MaskImageType);

  /** A trained model (an .autoreg file from `autoreg train`), or "default" for the model
   * shipped with autoreg. Default: "" (no model: instance optimisation). */
  autoregFilterSettingMacro(ModelFileName, std::string, model);

  /** "cpu" or "cuda". Default: "cpu". */
  autoregFilterSettingMacro(Device, std::string, device);

  /** Named settings for an anatomy and motion, as `autoreg register --preset`: "auto"
   * (chosen from the images by Update(): a CT pair gets "ct-cbct", a thick-slice MR of
   * the trunk "breathing", anything else "brain"; every setting given through a setter or
   * SetSetting is kept over the chosen preset), "brain" (adult brain MRI between
   * subjects), "breathing" (the same patient's frames across breathing) or "ct-cbct" (a
   * planning CT onto the same patient's cone-beam CT). Sets every setting the preset
   * names (the levels, the pre-alignment, the regulariser, its weight, the step, full
   * resolution); setters called after it override them. An unknown name throws
   * itk::ExceptionObject listing the known ones. Default: "auto". */
  void SetPreset(const std::string& name);
  virtual const std::string& GetPreset() const { return m_Settings.preset; }

  /** Instance optimisation steps per pyramid level, coarse to fine, the last at 1/2
   * resolution and each before it halving again (without a model; 1 to 6 levels).
   * Default: [70, 20]. */
  autoregFilterSettingMacro(NumberOfIterations, LevelIterationsType, iterations);

  /** Affine pre-alignment steps at 4 mm and at 2 mm. Default: [150, 100]. */
  virtual void SetAffineNumberOfIterations(const IterationsType& steps) {
    if (steps[0] == m_Settings.affine_iterations[0] && steps[1] == m_Settings.affine_iterations[1]) return;
    m_Settings.affine_iterations = {steps[0], steps[1]};
    this->Modified();
  }
  virtual IterationsType GetAffineNumberOfIterations() const {
    IterationsType steps;
    steps[0] = m_Settings.affine_iterations[0];
    steps[1] = m_Settings.affine_iterations[1];
    return steps;
  }

  /** With a model: steps of instance optimisation refining the network's field.
   * Default: 0. */
  autoregFilterSettingMacro(NumberOfRefinementIterations, unsigned int, refine);

  /** Image similarity: "ncc" (local normalised cross-correlation), "mse", or "mind"
   * (MIND-SSC, for images of different modalities). Default: "ncc". */
  autoregFilterSettingMacro(Similarity, std::string, similarity);

  /** The smoothness term of instance optimisation: "diffusion" (smooth everywhere,
   * brains) or "tv" (total variation: lets organs slide). Default: "diffusion". */
  autoregFilterSettingMacro(Regularizer, std::string, regularizer);

  /** Weight of the smoothness term of instance optimisation. Default: 1. */
  autoregFilterSettingMacro(Regularization, double, regularization);

  /** Instance optimisation's Adam step, in half-resolution voxels of the finest axis.
   * Default: 0.15 (0.4 for breathing motion, as `--preset breathing`). */
  autoregFilterSettingMacro(LearningRate, double, learning_rate);

  /** Instance optimisation's local NCC window in mm along each axis, the same
   * neighbourhood at every level and on thick slices, as `--ncc-window-mm`. Default: 0 (5
   * voxels of each level's grid, 7 at the finest). */
  autoregFilterSettingMacro(NccWindow, double, ncc_window_mm);

  /** The intensities mapped to 0 and 1 (clipped beyond) in both images, as
   * `--intensity-window LO,HI` (e.g. [-1000, 1000] for CT in HU); LO < HI, checked by
   * Update(). Default: automatic (a CT gets [-1000, 1000], anything else its 0.5th and
   * 99.5th percentiles): UseAutomaticIntensityWindow() returns to it. */
  using IntensityWindowType = FixedArray<double, 2>;
  virtual void SetIntensityWindow(const IntensityWindowType& window) {
    const std::array<double, 2> w{window[0], window[1]};
    if (m_Settings.intensity_window == w) return;
    m_Settings.intensity_window = w;
    this->Modified();
  }
  /** The window set, or [NaN, NaN] when automatic. */
  virtual IntensityWindowType GetIntensityWindow() const {
    IntensityWindowType w;
    w[0] = m_Settings.intensity_window ? (*m_Settings.intensity_window)[0] : std::nan("");
    w[1] = m_Settings.intensity_window ? (*m_Settings.intensity_window)[1] : std::nan("");
    return w;
  }
  virtual void UseAutomaticIntensityWindow() {
    if (!m_Settings.intensity_window) return;
    m_Settings.intensity_window.reset();
    this->Modified();
  }
  virtual bool GetUseAutomaticIntensityWindow() const { return !m_Settings.intensity_window; }

  /** The finest level compares the images at full resolution (the field stays on the
   * half-resolution grid): finer detail at about twice the time. Default: Off. */
  autoregFilterSettingMacro(UseFullResolution, bool, full_resolution);
  itkBooleanMacro(UseFullResolution);

  /** Each pyramid level before the finest compares the images of the level this many
   * levels finer, its field on its own grid: coarse levels that follow centimetres of
   * motion by fine structure. Default: 0 (2 for breathing motion, as `--preset
   * breathing`). */
  autoregFilterSettingMacro(CompareFiner, unsigned int, compare_finer);

  /** Rigid pre-alignment (6 degrees of freedom) instead of affine (12): the same
   * patient's scans. Default: Off. */
  autoregFilterSettingMacro(UseRigid, bool, rigid);
  itkBooleanMacro(UseRigid);

  /** The affine pre-alignment (Off: the images are already aligned). Default: On. */
  autoregFilterSettingMacro(UseAffine, bool, affine);
  itkBooleanMacro(UseAffine);

  /** The deformable stage (Off: affine only). Default: On. */
  autoregFilterSettingMacro(UseDeformable, bool, deformable);
  itkBooleanMacro(UseDeformable);

  /** What lies outside a scan's field of view, which no similarity compares: "auto" (a
   * Hounsfield-like constant at or below -500 around the field of view, found in each
   * image), "none" (every voxel compared), or a value for both images ("0" for an MR
   * crop), as `autoreg register --padding`. Anything else makes Update() throw. Default:
   * "auto". */
  itkSetMacro(Padding, std::string);
  itkGetConstReferenceMacro(Padding, std::string);

  /** Before instance optimisation, a discrete search of every displacement up to this
   * many mm along each axis (as `autoreg register --discrete-mm MM`): motion larger than the
   * pyramid follows from zero. Default: 0 (none). */
  autoregFilterSettingMacro(DiscreteSearchRadius, double, discrete_mm);

  /** Random seed of instance optimisation. Default: 0. */
  autoregFilterSettingMacro(Seed, uint64_t, seed);

  /** Any setting by its name in the settings table (autoreg/pair/registration_settings.h:
   * Python's keyword, e.g. "ncc_window_mm") and its value as `autoreg register` writes it
   * ("9", "70,20", "true"): the setters above, by name. An unknown name or a value that
   * does not read throws itk::ExceptionObject naming it. */
  void SetSetting(const std::string& keyword, const std::string& value);
  std::string GetSetting(const std::string& keyword) const;

  /** The transform the output field defines (valid after Update()): fixed point x ↦
   * x + d(x), for itk::ResampleImageFilter::SetTransform. */
  itkGetModifiableObjectMacro(Transform, TransformType);

 protected:
  AutoRegImageRegistrationFilter();
  ~AutoRegImageRegistrationFilter() override = default;

  void PrintSelf(std::ostream& os, Indent indent) const override;

  /** The two images may lie on any grids: ImageToImageFilter's check that all inputs
   * share one is switched off. */
  void VerifyInputInformation() ITKv5_CONST override {}
  /** Both inputs are needed whole. */
  void GenerateInputRequestedRegion() override;
  /** The field is computed whole. */
  void EnlargeOutputRequestedRegion(DataObject* output) override;
  void GenerateData() override;

 private:
  // What GenerateData registers with: m_Settings (`autoreg register`'s settings struct,
  // held whole, so that no setting can be dropped on the way) with the padding parsed
  // from its text (parse_padding's error is Update()'s).
  autoreg::pipeline::RegistrationSettings CurrentSettings() const;
  autoreg::pipeline::RegistrationSettings m_Settings;
  std::string m_Padding;
  typename TransformType::Pointer m_Transform{};
};

}  // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#  include "itkAutoRegImageRegistrationFilter.hxx"
#endif

#endif  // itkAutoRegImageRegistrationFilter_h
