#include "autoreg/pair/registration_settings.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "autoreg/base/names.h"
#include "autoreg/pair/option_values.h"
#include "autoreg/registration/regularization.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::pipeline {

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"auto", "the default: chosen from the images (a CT pair: ct-cbct; an MR of the trunk with thick slices: "
               "breathing; anything else: brain), printed and recorded in --json with the evidence",
       {45, 0.6, 1.6, "auto"}},
      {"brain", "adult brain MRI between subjects: affine, two levels, diffusion", {}},
      {"breathing", "the same patient's frames across breathing (liver, lungs): no affine, four levels "
                    "(140,140,70,40), each coarse level compared on the images of two levels finer, total "
                    "variation (sliding organs, weight 1), Adam steps of 0.4 voxels, the finest level at full "
                    "resolution",
       {45, 0.6, 1.6, "breathing"}},
      {"ct-cbct", "a planning CT onto the same patient's cone-beam CT (adaptive radiotherapy): a rigid "
                  "pre-alignment, kept only where it improves the match (the clinic's alignment otherwise), "
                  "the CBCT's field of view left out, local NCC (a CBCT is not in HU), diffusion of weight 4, three "
                  "levels (70,70,20)",
       rigid_limits("ct-cbct")}};
  return all;
}

RegistrationSettings preset_settings(const std::string& name) {
  RegistrationSettings s;
  s.preset = name;
  if (name == "brain" || name == "auto") return s;
  if (name == "breathing") {
    s.affine = false;
    s.iterations = {140, 140, 70, 40};
    s.regularizer = "tv";
    s.regularization = 1.0;
    s.learning_rate = 0.4;
    s.full_resolution = true;
    s.compare_finer = 2;
    return s;
  }
  if (name == "ct-cbct") {
    // λ 4 chosen on the shared pair CT → CBCT02 (Dice 0.470 at λ 1, 0.480 at 2, 0.488 at 4,
    // 0.486 at 8; docs/beyond-brains.md): the day's bowel gas is not anatomy to follow.
    s.rigid = true;
    s.regularization = 4.0;
    // Three levels (1/8, 1/4, 1/2), for organs that move more than a local window at 1/4
    // resolution sees: on the stress suite (docs/stress-suite.md) organs sliding 20 mm end
    // at 4.78 mm instead of 9.06, 15 mm of smooth motion at 2.04 instead of 2.42, the other
    // 19 CT cases within ±0.06 mm but the 34 cm cylinder (1.82 against 1.58); CBCT02's mean
    // Dice 0.503 against 0.488; about 0.5 s more. A fourth level adds nothing (c20 4.74).
    s.iterations = {70, 70, 20};
    return s;
  }
  std::string known;
  for (const Preset& p : presets()) known += (known.empty() ? "" : ", ") + p.name;
  throw SettingsError("--preset must be one of " + known + ", got '" + name + "'");
}

void mark_given(RegistrationSettings& s, const std::string& keyword) {
  if (std::find(s.given.begin(), s.given.end(), keyword) == s.given.end()) s.given.push_back(keyword);
}

bool is_given(const RegistrationSettings& s, const std::string& keyword) {
  if (std::find(s.given.begin(), s.given.end(), keyword) != s.given.end()) return true;
  const SettingRow& row = setting_row(keyword);
  return row.get(s) != row.get(RegistrationSettings{});
}

namespace {

// The pre-alignment given (--no-affine) without its kind (--rigid): a preset's rigid
// pre-alignment goes with it, so `--preset ct-cbct --no-affine` has none.
void unset_preset_rigid(RegistrationSettings& s, const std::vector<std::string>& given) {
  const auto has = [&](const char* k) { return std::find(given.begin(), given.end(), k) != given.end(); };
  if (has("affine") && !has("rigid")) s.rigid = false;
}

}  // namespace

RegistrationSettings with_preset(const RegistrationSettings& s, const std::string& name) {
  if (name == "auto") throw SettingsError("with_preset: a preset to apply, not auto");
  RegistrationSettings out = preset_settings(name);
  std::vector<std::string> keywords;
  for (const SettingRow& row : setting_rows()) {
    if (row.keyword != "preset" && is_given(s, row.keyword)) keywords.push_back(row.keyword);
  }
  unset_preset_rigid(out, keywords);
  for (const SettingRow& row : setting_rows()) {  // in the table's order, as settings_given
    if (std::find(keywords.begin(), keywords.end(), row.keyword) != keywords.end()) row.set(out, row.get(s));
  }
  out.given = s.given;
  return out;
}

void apply_preset(const std::string& name, RegistrationSettings& s) {
  const RegistrationSettings p = preset_settings(name);
  s.preset = p.preset;
  s.affine = p.affine;
  s.rigid = p.rigid;
  s.iterations = p.iterations;
  s.regularizer = p.regularizer;
  s.regularization = p.regularization;
  s.learning_rate = p.learning_rate;
  s.full_resolution = p.full_resolution;
  s.compare_finer = p.compare_finer;
}

namespace {

// The similarity's and the regularizer's names, as the command line refuses others.
void check_similarity(const std::string& name) { base::check_choice("similarity", registration::kSimilarityNames, name); }
void check_regularizer(const std::string& name) { base::check_choice("regularizer", registration::kRegularizerNames, name); }

}  // namespace

void validate(const RegistrationSettings& s) {
  check_similarity(s.similarity);
  base::check_choice("device", base::kDeviceNames, s.device);
  if (!s.affine && !s.deformable) {
    throw SettingsError("--affine-only and --no-affine exclude each other (neither the affine nor the deformable stage is on)");
  }
  check_regularizer(s.regularizer);
  if (s.rigid && !s.affine) throw SettingsError("--rigid and --no-affine exclude each other (--rigid sets the affine stage)");
  if (!(s.regularization >= 0)) throw SettingsError("--regularization must be >= 0");
  if (!(s.learning_rate > 0) || !std::isfinite(s.learning_rate)) {
    throw SettingsError("--learning-rate must be a positive number of voxels");
  }
  if (!s.model.empty() && !s.deformable) {
    throw SettingsError("--model and --affine-only exclude each other (the model is the deformable stage)");
  }
  if (s.iterations.empty() || s.iterations.size() > 6) {
    throw SettingsError("--iterations: 1 to 6 counts, one per pyramid level, got " + std::to_string(s.iterations.size()));
  }
  if (s.compare_finer > 5) throw SettingsError("--compare-finer: 0 to 5 levels, got " + std::to_string(s.compare_finer));
  if (!(s.ncc_window_mm >= 0) || !std::isfinite(s.ncc_window_mm)) {
    throw SettingsError("--ncc-window-mm must be 0 (windows in voxels) or a positive number of mm");
  }
  if (s.intensity_window && !((*s.intensity_window)[1] > (*s.intensity_window)[0])) {
    throw SettingsError("--intensity-window LO,HI needs LO < HI");
  }
  if (!(s.discrete_mm >= 0) || !std::isfinite(s.discrete_mm)) {
    throw SettingsError("--discrete-mm must be 0 (no discrete search) or a positive number of mm");
  }
  if (s.discrete_mm > 0 && !s.model.empty()) {
    throw SettingsError("--discrete-mm starts instance optimisation, which --model replaces");
  }
  if (s.discrete_mm > 0 && !s.deformable) throw SettingsError("--discrete-mm and --affine-only exclude each other");
  if (!(s.discrete_grid_mm > 0) || !std::isfinite(s.discrete_grid_mm)) {
    throw SettingsError("--discrete-grid-mm must be a positive number of mm");
  }
  if (s.refine > 0 && s.model.empty()) throw SettingsError("--refine needs --model (refinement iterations need a model to refine)");
}

std::string padding_text(const Padding& p) {
  if (p.rule == Padding::Rule::Automatic) return "auto";
  if (p.rule == Padding::Rule::None) return "none";
  return number_text(p.value);
}

Padding parse_padding(const std::string& text) {
  if (text == "auto") return {};
  if (text == "none") return {Padding::Rule::None, 0};
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    throw SettingsError("--padding must be auto, none or a number (the value outside the field of view, e.g. -1000), got '" +
                        text + "'");
  }
  return {Padding::Rule::Value, v};
}

namespace {

// Under --preset auto, the options of the settings given (RegistrationSettings::given, or
// off their default): the ranks choose the preset from the images as this process would,
// and keep these over it.
std::vector<std::string> auto_arguments(const RegistrationSettings& s) {
  if (!s.deformable) throw SettingsError("the deformable stage off (--affine-only) has no option here");
  std::vector<std::string> w{"--preset", "auto", "--device", s.device};
  for (const SettingRow& row : setting_rows()) {
    if (row.keyword == "preset" || row.keyword == "device" || row.keyword == "deformable") continue;
    const std::string text = row.get(s);
    if (!is_given(s, row.keyword) || text.empty()) continue;
    if ((row.keyword == "iterations" && !s.model.empty()) || (row.keyword == "refine" && s.model.empty())) continue;
    if (row.switch_sets.empty()) {
      w.insert(w.end(), {"--" + row.option, text});
    } else if (text == row.switch_sets) {
      w.push_back("--" + row.option);
    } else if (row.keyword != "affine" || !s.rigid) {  // --rigid turns the affine stage on
      throw SettingsError("--" + row.option + " off has no option under --preset auto");
    }
  }
  return w;
}

}  // namespace

std::string counts_text(const std::array<unsigned, 2>& counts) {
  return counts_text(std::vector<unsigned>(counts.begin(), counts.end()));
}

std::string counts_text(const std::vector<unsigned>& counts) {
  std::string text;
  for (unsigned n : counts) text += (text.empty() ? "" : ",") + std::to_string(n);
  return text;
}

std::vector<std::string> to_arguments(const RegistrationSettings& s) {
  if (s.preset == "auto") return auto_arguments(s);
  const RegistrationSettings preset = preset_settings(s.preset);
  std::vector<std::string> w{"--preset", s.preset, "--device", s.device};
  if (!s.deformable) throw SettingsError("the deformable stage off (--affine-only) has no option here");
  if (s.rigid) {
    w.push_back("--rigid");
  } else if (!s.affine) {
    w.push_back("--no-affine");
  } else if (!preset.affine) {
    throw SettingsError("the affine stage on under --preset " + s.preset + " has no option (only --rigid turns it on)");
  }
  if (s.full_resolution) {
    w.push_back("--full-resolution");
  } else if (preset.full_resolution) {
    throw SettingsError("--full-resolution off under --preset " + s.preset + " has no option");
  }
  // Every other row's option with its value (the table's text), but those the command
  // line refuses here: --iterations with a model (which replaces it), --refine without.
  for (const SettingRow& row : setting_rows()) {
    if (!row.switch_sets.empty() || row.keyword == "preset" || row.keyword == "device") continue;
    if ((row.keyword == "iterations" && !s.model.empty()) || (row.keyword == "refine" && s.model.empty())) continue;
    const std::string text = row.get(s);
    if (!text.empty()) w.insert(w.end(), {"--" + row.option, text});
  }
  return w;
}

namespace {

std::string boolean_text(bool b) { return b ? "true" : "false"; }

bool parse_boolean(const std::string& option, const std::string& text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw SettingsError("--" + option + ": true or false, got '" + text + "'");
}

double parse_number(const std::string& option, const std::string& text) {
  const std::vector<double> v = parse_number_list("--" + option, text);
  if (v.size() != 1) throw SettingsError("--" + option + ": one number, got '" + text + "'");
  return v[0];
}

uint64_t parse_whole(const std::string& option, const std::string& text) {
  const std::vector<int64_t> v = parse_int_list("--" + option, text);
  if (v.size() != 1 || v[0] < 0) throw SettingsError("--" + option + ": a whole number >= 0, got '" + text + "'");
  return uint64_t(v[0]);
}

std::string presets_help() {
  std::string text = "named settings for an anatomy and motion, which the options given override:";
  for (const Preset& p : presets()) text += " " + p.name + " (" + p.purpose + ");";
  return text;
}

using S = RegistrationSettings;

// A row of the table, in the order its rows are written.
SettingRow row(std::string keyword, std::string option, bool command_option, std::string switch_sets,
               std::string value_name, std::string help, std::function<std::string(const S&)> get,
               std::function<void(S&, const std::string&)> set, std::string sample, SettingKind kind = SettingKind::Text) {
  SettingRow r{std::move(keyword), std::move(option), std::move(value_name), std::move(help), std::move(get), std::move(set)};
  r.switch_sets = std::move(switch_sets);
  r.sample = std::move(sample);
  r.kind = kind;
  r.command_option = command_option;
  return r;
}

// The preset, the model, the device and which stages run (in this order: --rigid before
// --no-affine, which turns the pre-alignment back off).
void add_stage_rows(std::vector<SettingRow>& rows) {
  // The preset: a base the others override (the ITK filter's SetPreset keeps what it does not name).
  rows.push_back(row("preset", "preset", false, "", "PRESET", presets_help(), [](const S& s) { return s.preset; },
                  [](S& s, const std::string& t) { apply_preset(t, s); }, "breathing"));
  rows.push_back(row("model", "model", false, "", "FILE",
                  "a trained model (.autoreg, from autoreg train), or 'default' for the model shipped with autoreg; "
                  "without it, instance optimisation",
                  [](const S& s) { return s.model; }, [](S& s, const std::string& t) { s.model = t; }, "default"));
  rows.push_back(row("device", "device", true, "", "cpu|cuda", "where to run", [](const S& s) { return s.device; },
                  [](S& s, const std::string& t) { s.device = t; }, "cuda"));
  rows.push_back(row("rigid", "rigid", false, "true", "",
                  "a rigid pre-alignment (rotation and translation, 6 degrees of freedom) instead of the affine (12): "
                  "the same patient's scans, where scale and shear would follow an organ that moves inside the body",
                  [](const S& s) { return boolean_text(s.rigid); },
                  [](S& s, const std::string& t) {
                    s.rigid = parse_boolean("rigid", t);
                    if (s.rigid) s.affine = true;  // turns on the pre-alignment a preset turned off
                  },
                  "true", SettingKind::Boolean));
  rows.push_back(row("affine", "no-affine", false, "false", "", "skip the affine pre-alignment (already aligned inputs)",
                  [](const S& s) { return boolean_text(s.affine); },
                  [](S& s, const std::string& t) { s.affine = parse_boolean("no-affine", t); }, "false", SettingKind::Boolean));
  rows.push_back(row("deformable", "affine-only", true, "false", "", "stop after the affine pre-alignment",
                  [](const S& s) { return boolean_text(s.deformable); },
                  [](S& s, const std::string& t) { s.deformable = parse_boolean("affine-only", t); }, "false", SettingKind::Boolean));
}

// What instance optimisation and the affine stage do: the similarity, the smoothness, the
// steps and levels, the network's refinement, the seed.
void add_optimisation_rows(std::vector<SettingRow>& rows) {
  rows.push_back(row("similarity", "similarity", false, "", registration::kSimilarityNames.joined(),
                  "ncc, mse, or mind (MIND-SSC, for different modalities)", [](const S& s) { return s.similarity; },
                  [](S& s, const std::string& t) {
                    check_similarity(t);
                    s.similarity = t;
                  },
                  "mind"));
  rows.push_back(row("regularizer", "regularizer", false, "", registration::kRegularizerNames.joined(),
                  "instance optimisation's smoothness: diffusion (smooth everywhere, brains) or tv (total variation: "
                  "lets organs slide, e.g. the liver along the body wall)",
                  [](const S& s) { return s.regularizer; },
                  [](S& s, const std::string& t) {
                    check_regularizer(t);
                    s.regularizer = t;
                  },
                  "tv"));
  rows.push_back(row("regularization", "regularization", false, "", "λ", "weight λ of the smoothness term",
                  [](const S& s) { return number_text(s.regularization); },
                  [](S& s, const std::string& t) { s.regularization = parse_number("regularization", t); }, "0.5", SettingKind::Number));
  rows.push_back(row("learning_rate", "learning-rate", false, "", "STEP",
                  "instance optimisation's Adam step in half-resolution voxels of the finest axis, the same length in "
                  "mm at every level (0.4 in --preset breathing)",
                  [](const S& s) { return number_text(s.learning_rate); },
                  [](S& s, const std::string& t) { s.learning_rate = parse_number("learning-rate", t); }, "0.3", SettingKind::Number));
  rows.push_back(base::with_aliases(row("ncc_window_mm", "ncc-window-mm", false, "", "MM",
                  "instance optimisation's local NCC window in mm along each axis, the same neighbourhood at every "
                  "level and on thick slices (0: 5 voxels of each level, 7 at the finest)",
                  [](const S& s) { return number_text(s.ncc_window_mm); },
                  [](S& s, const std::string& t) { s.ncc_window_mm = parse_number("ncc-window-mm", t); }, "7", SettingKind::Number),
                    {"ncc-window"}));
  rows.push_back(row("iterations", "iterations", false, "", "N1,N2,...",
                  "deformable Adam steps per pyramid level, coarse to fine: the last at 1/2 resolution, each before "
                  "it halving again (1 to 6 levels, more for larger motion, e.g. 140,140,70,40 in --preset "
                  "breathing; thick slices are not shrunk until the others reach them)",
                  [](const S& s) { return counts_text(s.iterations); },
                  [](S& s, const std::string& t) { s.iterations = parse_counts("--iterations", t, 1, 6); },
                  "30,20,10", SettingKind::Numbers));
  rows.push_back(row("full_resolution", "full-resolution", false, "true", "",
                  "the finest level compares the images at full resolution (the field stays on the half-resolution "
                  "grid): finer detail at about twice the time; on in --preset breathing",
                  [](const S& s) { return boolean_text(s.full_resolution); },
                  [](S& s, const std::string& t) { s.full_resolution = parse_boolean("full-resolution", t); }, "true", SettingKind::Boolean));
  rows.push_back(row("compare_finer", "compare-finer", false, "", "N",
                  "each pyramid level before the finest compares the images of the level N finer (at most 1/2 "
                  "resolution), its field on its own grid: coarse levels that follow centimetres of motion by fine "
                  "structure (vessels) rather than blurred blobs, at up to 1.5 times the time (2 in --preset breathing)",
                  [](const S& s) { return std::to_string(s.compare_finer); },
                  [](S& s, const std::string& t) { s.compare_finer = unsigned(parse_whole("compare-finer", t)); }, "1", SettingKind::Whole));
  rows.push_back(row("affine_iterations", "affine-iterations", false, "", "N1,N2", "affine Adam steps at 4 mm and 2 mm",
                  [](const S& s) { return counts_text(s.affine_iterations); },
                  [](S& s, const std::string& t) {
                    const std::vector<unsigned> c = parse_counts("--affine-iterations", t, 2, 2);
                    s.affine_iterations = {c[0], c[1]};
                  },
                  "40,30", SettingKind::Numbers));
  rows.push_back(row("refine", "refine", false, "", "K",
                  "with --model: Adam steps of instance optimisation (1/2 resolution) refining the network's field",
                  [](const S& s) { return std::to_string(s.refine); },
                  [](S& s, const std::string& t) { s.refine = unsigned(parse_whole("refine", t)); }, "5", SettingKind::Whole));
  rows.push_back(row("seed", "seed", false, "", "S", "random seed", [](const S& s) { return std::to_string(s.seed); },
                  [](S& s, const std::string& t) { s.seed = parse_whole("seed", t); }, "7", SettingKind::Whole));
}

// How the images are read and compared where a scan has no data: the intensity window, the
// padding outside the field of view, the discrete search for large motion, gas.
void add_scan_rows(std::vector<SettingRow>& rows) {
  rows.push_back(row("intensity_window", "intensity-window", false, "", "LO,HI",
                  "the intensities mapped to 0 and 1, clipped beyond, for both images (e.g. -1000,1000 for CT in HU); "
                  "unset, automatic: a CT (its 0.5th percentile at or below -500 HU) gets -1000,1000, anything else "
                  "its 0.5th and 99.5th percentiles",
                  [](const S& s) {
                    return s.intensity_window ? number_text((*s.intensity_window)[0]) + "," + number_text((*s.intensity_window)[1])
                                              : std::string();
                  },
                  [](S& s, const std::string& t) {
                    if (t.empty()) {
                      s.intensity_window.reset();
                      return;
                    }
                    const std::vector<double> w = parse_number_list("--intensity-window", t);
                    if (w.size() != 2 || !(w[1] > w[0])) {
                      throw SettingsError("--intensity-window: two values LO,HI with LO < HI, e.g. -1000,1000");
                    }
                    s.intensity_window = std::array<double, 2>{w[0], w[1]};
                  },
                  "-1000,1000", SettingKind::Numbers));
  rows.push_back(row("padding", "padding", false, "", "auto|none|VALUE",
                  "the constant outside a scan's field of view, which no similarity compares (a cone-beam CT's "
                  "cylinder, a CT's reconstruction circle): auto (each image's minimum when it is at or below -500 "
                  "and a constant around the field of view, not clamped air), none, or a value for both images (e.g. "
                  "0 for an MR crop); --json reports what was found",
                  [](const S& s) { return padding_text(s.padding); },
                  [](S& s, const std::string& t) { s.padding = parse_padding(t); }, "-1024"));
  rows.push_back(base::with_aliases(row("discrete_mm", "discrete-mm", false, "", "MM",
                  "before instance optimisation, search every displacement up to MM millimetres along each axis on a "
                  "4 mm grid (MIND-SSC cost volume, coupled convex optimisation, as ConvexAdam): motion larger than "
                  "the pyramid follows from zero (0: none)",
                  [](const S& s) { return number_text(s.discrete_mm); },
                  [](S& s, const std::string& t) { s.discrete_mm = parse_number("discrete-mm", t); }, "20", SettingKind::Number),
                    {"discrete"}));
  rows.push_back(base::with_aliases(row("discrete_grid_mm", "discrete-grid-mm", false, "", "MM",
                  "with --discrete-mm: the search's grid, about MM per voxel; finer follows smaller structures, its cost "
                  "volume (and time) growing with the cube of 1/MM",
                  [](const S& s) { return number_text(s.discrete_grid_mm); },
                  [](S& s, const std::string& t) { s.discrete_grid_mm = parse_number("discrete-grid-mm", t); }, "3", SettingKind::Number),
                    {"discrete-grid"}));
  rows.push_back(row("exclude_gas", "exclude-gas", false, "", "true|false",
                  "leave gas inside the body (bowel, stomach) out of every similarity in Hounsfield-like scans (CT, "
                  "CBCT): found per scan below halfway between its air and its soft tissue, not connected to the air "
                  "around the body, grown by 2 mm",
                  [](const S& s) { return boolean_text(s.exclude_gas); },
                  [](S& s, const std::string& t) { s.exclude_gas = parse_boolean("exclude-gas", t); }, "true",
                  SettingKind::Boolean));
}

std::vector<SettingRow> make_rows() {
  std::vector<SettingRow> rows;
  add_stage_rows(rows);
  add_optimisation_rows(rows);
  add_scan_rows(rows);
  return rows;
}

}  // namespace

const std::vector<SettingRow>& setting_rows() {
  static const std::vector<SettingRow> rows = make_rows();
  return rows;
}

const SettingRow& setting_row(const std::string& keyword) {
  if (const SettingRow* row = base::find_row(setting_rows(), keyword)) return *row;
  throw SettingsError("unknown setting '" + keyword + "' (known: " + base::keywords_text(setting_rows()) + ")");
}

RegistrationSettings settings_given(const std::map<std::string, std::string>& given) {
  for (const auto& [keyword, text] : given) setting_row(keyword);  // an unknown name: SettingsError
  const auto preset = given.find("preset");
  RegistrationSettings s = preset_settings(preset == given.end() ? "auto" : preset->second);
  std::vector<std::string> keywords;
  for (const auto& [keyword, text] : given) keywords.push_back(keyword);
  unset_preset_rigid(s, keywords);
  for (const SettingRow& row : setting_rows()) {
    const auto it = given.find(row.keyword);
    if (row.keyword != "preset" && it != given.end()) {
      row.set(s, it->second);
      mark_given(s, row.keyword);
    }
  }
  if (given.count("iterations") && !s.model.empty()) {
    throw SettingsError("--iterations sets instance optimisation, which --model replaces (use --refine K)");
  }
  return s;
}

}  // namespace autoreg::pipeline
