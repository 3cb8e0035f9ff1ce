// Quality-control pictures of a registration: one PNG per pair that a person can scan in
// a second (did the brain land on the brain, are the labels where they belong, does the
// field fold), and an index.html that lists a batch's pictures worst first.
//
// Plain arrays in, so that any program can call it without LibTorch; ITK writes the PNG.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace autoreg::qc {

// A 3-D array on the fixed grid: data[(d*H + h)*W + w], size = {D, H, W}.
struct VolumeView {
  const float* data = nullptr;
  std::array<int64_t, 3> size{};
};
struct LabelView {
  const int32_t* data = nullptr;
  std::array<int64_t, 3> size{};
};
struct MaskView {  // non-zero inside
  const uint8_t* data = nullptr;
  std::array<int64_t, 3> size{};
};

// How an image's grey levels are shown: [lo, hi] from black to white, and what it is
// (the caption's window line: "W400 L40 HU, CT soft tissue"). lo, hi NaN: the 1st-99th
// percentile of its voxels inside its mask (where given, else its non-zero voxels).
struct GreyWindow {
  float lo = std::numeric_limits<float>::quiet_NaN(), hi = std::numeric_limits<float>::quiet_NaN();
  std::string name;
};

struct PictureInputs {
  VolumeView fixed;         // required
  VolumeView warped;        // required: the moving image warped onto the fixed grid
  LabelView labels;         // optional (data == nullptr): warped labels, outlined on the fixed image
  // Optional: where each image has data (its field of view; for the warped image, where
  // the map lands inside the moving one's). Its window's percentiles are taken there, its
  // edge is drawn (kFieldOfViewColour), and the log Jacobian is drawn only where both have data.
  MaskView fixed_inside, warped_inside;
  GreyWindow fixed_window, warped_window;  // the grey levels; names given: a line of the caption says them
  VolumeView log_jacobian;  // optional: log det J; NaN or -inf (det <= 0) is drawn as folding
  std::array<double, 3> spacing{1, 1, 1};  // mm along D, H, W: panels keep the physical aspect
  // The anatomical direction (L R P A S I) each tensor axis D, H, W points to as its
  // index grows. Letters that do not name three different axes fall back to the planes
  // perpendicular to D, H, W, unflipped.
  std::array<char, 3> axis_letters{'S', 'P', 'L'};
  // Slice indices (d, h, w); -1: the centroid of the labels when given (the slices go
  // through the labelled structures), else of the fixed image's foreground (voxels above
  // 10% of its 99.5th percentile, inside fixed_inside where given).
  std::array<int64_t, 3> centre{-1, -1, -1};
  std::string caption;  // one line of figures at the bottom (wrapped when too long)
  std::string title;    // optional, at the top
  std::string warning;  // optional: a failed check, in red below the caption (wrapped)
};

// Writes the picture as an 8-bit RGB PNG, atomically (a temporary file renamed into
// place). Rows: axial, coronal, sagittal through `centre`, in the radiological
// convention (axial: anterior up, patient's right on the left; coronal: superior up,
// right on the left; sagittal: superior up, anterior on the left). Columns: fixed,
// warped moving, checkerboard, labels on fixed (edges of the warped image when there are
// no labels), log|J| (blue-white-red over ±s, s = max(0.1, 99th percentile of |log J| on
// the three slices where both images have data), with its colour bar). Grey values are
// windowed by each image's GreyWindow.
// Throws std::invalid_argument for missing or inconsistent inputs, std::runtime_error
// naming `path` when the file cannot be written.
void write_picture(const std::string& path, const PictureInputs& in);

// ---- what the picture is made of, for readers of it (and its tests) -----------------

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
  bool operator!=(const Rgb& o) const { return !(*this == o); }
};
inline constexpr Rgb kFoldingColour{0, 255, 0};  // voxels whose Jacobian determinant is <= 0
inline constexpr Rgb kEdgeColour{255, 200, 0};   // edges of the warped image (no labels given)
inline constexpr Rgb kFieldOfViewColour{0, 190, 255};  // the edge of an image's field of view
inline constexpr Rgb kNoDataColour{45, 45, 45};        // where an image has no data (or no log|J|)
// The outline colour of a label value: a fixed hash of the value into a palette of
// saturated colours, none grey, none the folding or edge colour.
Rgb label_colour(int32_t label);

struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
};
enum Column { kFixed = 0, kWarped, kCheckerboard, kOverlay, kLogJacobian, kColumns };

// Where everything is in the picture of `in` (validated as write_picture does).
struct PictureLayout {
  int width = 0, height = 0;                   // of the whole picture
  std::array<std::string, 3> row_names;        // "axial", "coronal", "sagittal" (or "plane D", ...)
  std::array<int, 3> row_normal{};             // the tensor axis each row's plane is perpendicular to
  std::array<int64_t, 3> centre{};             // the slice indices (d, h, w) drawn
  std::array<std::array<Rect, kColumns>, 3> panels{};  // [row][column]: the slice's pixels
  Rect colour_bar;                             // the log|J| scale's bar (+s at the top)
  Rect caption;                                // the caption strip at the bottom
  std::vector<std::string> caption_lines;      // the caption as drawn (ASCII, wrapped), then
  size_t warning_lines = 0;                    // the warning's lines among them (the last ones, red)
};
inline constexpr Rgb kWarningColour{255, 70, 70};  // the warning's text
PictureLayout picture_layout(const PictureInputs& in);

// ---- index.html ----------------------------------------------------------------------

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();
struct IndexRow {
  std::string name;
  std::string picture;  // path relative to the html
  std::string status;   // "ok" or "failed"
  std::string error;
  std::string warning;  // a failed check (pair_checks.h): the row is drawn in red and sorted with the failures
  double dice = kNoValue;
  double tre_mm = kNoValue;  // landmarks' mean error after registration (a column when any row has it)
  double folding_percent = kNoValue;
  double seconds = kNoValue;
};
// A self-contained page (no external resources) listing every row worst first: failed
// rows, then ascending Dice (rows without Dice after those with), then descending TRE
// (rows without it after those with), ties by descending folding. After the page loads, a script counts the pictures that loaded into
// #qc-load-status ("loaded N of M pictures") and body[data-loaded][data-total], and
// marks broken ones. Written atomically; throws std::runtime_error naming `path`.
void write_index_html(const std::string& path, std::vector<IndexRow> rows, const std::string& title);

}  // namespace autoreg::qc
