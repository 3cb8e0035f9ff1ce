// How a pair is registered: the settings that `autoreg register`, `autoreg segment` (for
// each atlas) and itk::AutoRegImageRegistrationFilter share, with their defaults, checked
// in one place (validate) and turned into the pipeline's options in one place
// (pair_options, register_pair.h). No LibTorch types: code that uses the ITK filter
// compiles against ITK alone.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/base/schema.h"
#include "autoreg/base/errors.h"

namespace autoreg::pipeline {

// Settings that contradict each other or are out of range: a usage error (exit 1 on the
// command line) whose message names the command-line option (the ITK filter's setters
// carry the same names).
using SettingsError = base::UsageError;

// --padding: what lies outside a scan's field of view (registration/field_of_view.h),
// which no similarity compares. Automatic: a Hounsfield-like constant (at or below
// −500) around the field of view, found in each image; none: every voxel is compared
// (as before there was this setting); a value: that constant, in both images.
struct Padding {
  enum class Rule { Automatic, None, Value };
  Rule rule = Rule::Automatic;
  double value = 0;  // with Rule::Value
  bool operator==(const Padding& o) const { return rule == o.rule && (rule != Rule::Value || value == o.value); }
};
// "auto", "none" or the value ("-1000"), as the command line writes it; and back
// (SettingsError naming --padding for anything else).
std::string padding_text(const Padding& p);
Padding parse_padding(const std::string& text);

struct RegistrationSettings {
  // --preset: the named settings these start from (presets()); "auto" (the default): the
  // preset chosen from the images when the pair is registered (preset_choice.h), under
  // the settings given
  std::string preset = "auto";
  std::string model;               // --model: an .autoreg file, "default" (the shipped model), or "" (instance optimisation)
  std::string device = "cpu";      // --device: cpu or cuda
  bool affine = true;              // false: the images are aligned already (--no-affine)
  bool deformable = true;          // false: the affine alone (--affine-only)
  bool rigid = false;              // --rigid: 6 degrees of freedom (the same patient's scans)
  std::string similarity = "ncc";  // --similarity: ncc, mse or mind (MIND-SSC, for different modalities)
  // --regularizer: instance optimisation's smoothness term, diffusion or tv (total
  // variation, for organs that slide; registration/regularization.h)
  std::string regularizer = "diffusion";
  // --regularization: the term's weight λ (1: diffusion's chosen on the OASIS validation
  // pairs; the breathing preset's tv 1, on the liver pairs, docs/beyond-brains.md)
  double regularization = 1.0;
  // --learning-rate: instance optimisation's Adam step, in half-resolution voxels of the
  // finest axis (the same physical length at every level): 0.15 on brains, 0.4 in the
  // breathing preset (motion of centimetres)
  double learning_rate = 0.15;
  // --ncc-window-mm: the local NCC window of instance optimisation in mm along each axis
  // (odd numbers of each level's voxels, at least 3); 0: 5 voxels of each level's grid,
  // 7 at the finest (on the liver pairs the voxel windows did better, beyond-brains.md)
  double ncc_window_mm = 0;
  // --iterations: instance optimisation's Adam steps per pyramid level, coarse to fine,
  // the last at 1/2 resolution and each before it halving again (1 to 6 levels; the
  // pyramid planned per axis from the spacing, registration/instance.h)
  std::vector<unsigned> iterations{70, 20};
  bool full_resolution = false;    // --full-resolution: the finest level compares the full-resolution images
  // --compare-finer N: each level before the finest compares the images of the level N
  // finer (registration/instance.h); 0 by default, 2 in the breathing preset
  unsigned compare_finer = 0;
  std::array<unsigned, 2> affine_iterations{150, 100};  // --affine-iterations: the affine's Adam steps at 4 mm and 2 mm
  unsigned refine = 0;             // --refine: with a model, instance optimisation steps refining its field
  uint64_t seed = 0;               // --seed
  // --intensity-window LO,HI: the intensities mapped to 0 and 1 (clipped beyond); unset,
  // automatic: a CT (Hounsfield units: the 0.5th percentile at or below -500) gets
  // kCtWindow, anything else its 0.5th and 99.5th percentiles (a model's own percentiles)
  std::optional<std::array<double, 2>> intensity_window;
  Padding padding;                 // --padding auto|none|VALUE: outside the fields of view (automatic)
  // --discrete-mm MM: before instance optimisation, a discrete search of every displacement
  // up to MM millimetres along each axis on a 4 mm grid (registration/discrete.h: large
  // motion); 0 (the default): none
  double discrete_mm = 0;
  // --discrete-grid-mm MM: the discrete search's grid, about MM per voxel (4: ConvexAdam's
  // half-resolution grid on 1-2 mm scans); finer follows smaller structures at the cube
  // of the cost
  double discrete_grid_mm = 4;
  // --exclude-gas: gas inside the body (bowel, stomach) found in each Hounsfield-like scan
  // (below halfway between its air and its soft tissue, as measured: a CBCT's offset
  // included; not connected to the air around the body) and left out of every similarity,
  // grown by 2 mm: the day's gas is no anatomy to follow. Off by default
  bool exclude_gas = false;
  // The settings given over the preset (their keywords, as settings_given and the ITK
  // filter's setters record them): what --preset auto keeps when it applies the preset it
  // chose. A setting that differs from its default counts as given too (a library
  // caller's struct filled by hand).
  std::vector<std::string> given;
};

// Records `keyword` as given over the preset (once).
void mark_given(RegistrationSettings& s, const std::string& keyword);
// Whether the setting `keyword` counts as given over the preset: recorded in
// RegistrationSettings::given, or off its default.
bool is_given(const RegistrationSettings& s, const std::string& keyword);
// `s` under the preset `name` (not auto): its settings, then every setting given in `s`
// (RegistrationSettings::given, and any other that differs from its default) over them.
RegistrationSettings with_preset(const RegistrationSettings& s, const std::string& name);

// The CT window of the automatic normalisation, HU: air at 0, dense bone at 1, soft tissue
// near the middle (uniGradICON's clamp).
inline constexpr std::array<double, 2> kCtWindow{-1000, 1000};

// The named settings `--preset` chooses, each with what it is for:
//   auto       the default: one of the others, chosen from the images when the pair is
//              registered (pipeline/preset_choice.h: a CT pair gets ct-cbct, a thick-slice
//              MR of the trunk breathing, anything else brain); until then brain's settings
//   brain      adult brain MRI between subjects (affine, two levels, diffusion)
//   breathing  the same patient's frames across breathing (liver, lungs, kidneys): no
//              affine (the body wall does not move), four levels (motion of centimetres)
//              each compared on the images of two levels finer (they follow the
//              vessels, not blurred blobs), total variation (organs slide along the body
//              wall) of weight 1, Adam steps of 0.4 voxels, the finest level compared at
//              full resolution (vessels of thin in-plane voxels)
//   ct-cbct    a planning CT onto the same patient's cone-beam CT: rigid pre-alignment
//              (dropped unless it improves the match, as every pre-alignment), the
//              padding around the CBCT's field of view not compared (automatic), local
//              NCC (the CBCT is not in HU), diffusion of weight 4
// How far a pre-alignment may turn and scale before the affine_limits check warns
// (pair_checks.h), and whose limits they are ("brain", "ct-cbct", "rigid", "same patient's").
struct AffineLimits {
  double max_rotation_degrees = 45;
  double min_scale = 0.6, max_scale = 1.6;  // of each singular value of the linear part
  std::string from = "brain";
};
// A rigid pre-alignment's limits: the same patient's scans, where 15° or 2 % of scale is a failure.
inline AffineLimits rigid_limits(std::string from) { return {15, 0.98, 1.02, std::move(from)}; }

struct Preset {
  std::string name, purpose;
  AffineLimits limits;  // what its pre-alignment may do (pair_options puts them in PairOptions)
};
const std::vector<Preset>& presets();
// The settings of the preset `name` (SettingsError naming the known ones otherwise).
RegistrationSettings preset_settings(const std::string& name);
// Sets in `s` what the preset `name` names (its name, the pre-alignment, the levels, the
// regulariser, its weight, the step, full resolution) and leaves the rest (the model,
// the similarity, the seed, …): the ITK filter's SetPreset after other setters.
void apply_preset(const std::string& name, RegistrationSettings& s);

// The settings table: one row per setting of RegistrationSettings, from which the front
// ends are made: the command line's options (apps/registration_args.h: name, help,
// default), Python's keyword arguments (python/src/settings.h: the keywords, their
// reading, the docstring's list), the ITK filter's SetSetting/GetSetting, and a test that
// walks every row through all three. A new setting is a field, a row and its algorithm.
// Values travel as the command line's text ("70,20", "true", "-1000,1000", "auto").
// What a setting's text stands for, for the --json record (typed values): base's.
using base::SettingKind;

// A row of the settings table: base/schema.h's row over RegistrationSettings, every field
// of it used (the keyword is Python's keyword and the ITK filter's SetSetting name;
// command_option: --device and --affine-only are the commands' own options; switch_sets:
// the value a switch's presence gives; sample: a valid value other than the default, for
// the table's test; kind: the --json record's type). Its set throws SettingsError.
using SettingRow = base::SettingField<RegistrationSettings>;
// Every row, in the order they are applied: the preset first (the others override it),
// --rigid before --no-affine (which turns the pre-alignment back off).
const std::vector<SettingRow>& setting_rows();
// The row of `keyword`; SettingsError naming the known ones otherwise.
const SettingRow& setting_row(const std::string& keyword);
// The settings that the named values give (keyword → the command line's text), as every
// front end reads what it was given: the preset's settings (brain without one), then each
// value given, in the table's order. SettingsError for an unknown name, a value that does
// not read, and iterations with a model (which replaces them); validate() checks the rest.
RegistrationSettings settings_given(const std::map<std::string, std::string>& given);

// Throws SettingsError for settings that contradict each other or are out of range.
void validate(const RegistrationSettings& settings);

// The options of `autoreg register` that give these settings back (the command line of
// a job's ranks; numbers exact). A SettingsError for settings no option expresses (the
// affine stage on under a preset that turns it off, other than by --rigid; full
// resolution off under one that turns it on; the deformable stage off).
std::vector<std::string> to_arguments(const RegistrationSettings& settings);

// Counts as the command line writes them: {70, 20} → "70,20".
std::string counts_text(const std::array<unsigned, 2>& counts);
std::string counts_text(const std::vector<unsigned>& counts);

}  // namespace autoreg::pipeline
