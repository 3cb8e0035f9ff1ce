// The quality-control picture: validation, layout and drawing (slices.cpp samples the
// volumes, canvas.cpp draws text and writes the PNG).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "autoreg/qc/picture.h"
#include "canvas.h"
#include "slices.h"

namespace autoreg::qc {

namespace {

using detail::Canvas;
using detail::kCharWidth;
using detail::kLineHeight;
using detail::kTextHeight;
using detail::text_width;

constexpr int kPad = 8;                // px between strips and columns
constexpr int kLongestPanel = 240;     // px on the longest physical side of the volume
constexpr int kCheckerSquares = 8;     // squares across a checkerboard panel's longer side
constexpr int kBarWidth = 14;          // px of the log|J| colour bar
constexpr int kBarLabelChars = 6;      // room for "+0.123" (3 significant digits) beside it
constexpr float kMinJacobianScale = 0.1f;  // the colour bar spans at least ±0.1
constexpr float kEdgeFraction = 0.3f;  // edges: gradient above 30% of its 99th percentile
constexpr Rgb kBackground{20, 20, 20};
constexpr Rgb kCaptionBackground{40, 40, 40};
constexpr Rgb kNoData{45, 45, 45};
constexpr Rgb kText{235, 235, 235};
constexpr Rgb kDimText{150, 150, 150};
constexpr Rgb kOrientation{255, 210, 60};

std::string dims(const std::array<int64_t, 3>& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

void check_matches(const char* what, const void* data, const std::array<int64_t, 3>& size,
                   const std::array<int64_t, 3>& fixed) {
  if (data != nullptr && size != fixed) {
    throw std::invalid_argument(std::string("qc picture: the ") + what + " is " + dims(size) +
                                " (D x H x W), the fixed image " + dims(fixed));
  }
}

void validate(const PictureInputs& in) {
  if (in.fixed.data == nullptr) throw std::invalid_argument("qc picture: the fixed image is missing");
  if (in.warped.data == nullptr) throw std::invalid_argument("qc picture: the warped image is missing");
  for (int a = 0; a < 3; ++a) {
    if (in.fixed.size[a] <= 0) {
      throw std::invalid_argument("qc picture: the fixed image is " + dims(in.fixed.size) +
                                  ": every dimension must be at least 1");
    }
    if (!(std::isfinite(in.spacing[a]) && in.spacing[a] > 0)) {
      throw std::invalid_argument("qc picture: spacing " + std::to_string(in.spacing[a]) + " along axis " +
                                  std::to_string(a) + " is not a positive number");
    }
    if (in.centre[a] != -1 && (in.centre[a] < 0 || in.centre[a] >= in.fixed.size[a])) {
      throw std::invalid_argument("qc picture: centre " + std::to_string(in.centre[a]) + " along axis " +
                                  std::to_string(a) + " is outside 0.." + std::to_string(in.fixed.size[a] - 1));
    }
  }
  check_matches("warped image", in.warped.data, in.warped.size, in.fixed.size);
  check_matches("label map", in.labels.data, in.labels.size, in.fixed.size);
  check_matches("log-Jacobian", in.log_jacobian.data, in.log_jacobian.size, in.fixed.size);
}

std::string column_name(int c, bool labels) {
  static const char* const kNames[kColumns] = {"fixed", "warped moving", "checkerboard", "labels on fixed",
                                               "log |J|"};
  return c == kOverlay && !labels ? "edges on fixed" : kNames[c];
}

// The slice a row shows, e.g. "d=20".
std::string slice_label(const detail::Plane& p, const std::array<int64_t, 3>& centre) {
  return std::string(1, "dhw"[p.normal]) + "=" + std::to_string(centre[p.normal]);
}

// The layout and what drawing needs beside it.
struct Frame {
  PictureLayout layout;
  std::array<detail::Plane, 3> planes;
  std::array<int, 3> row_top{};
  int header_y = 0, cell_width = 0, left = 0;
};

Frame make_frame(const PictureInputs& in) {
  validate(in);
  Frame f;
  PictureLayout& L = f.layout;
  f.planes = detail::display_planes(in.axis_letters);
  const auto& n = in.fixed.size;
  L.centre = in.centre;
  if (std::find(in.centre.begin(), in.centre.end(), -1) != in.centre.end()) {
    const auto foreground = detail::foreground_centre(in.fixed);
    for (int a = 0; a < 3; ++a) L.centre[a] = in.centre[a] == -1 ? foreground[a] : in.centre[a];
  }
  // One scale (px per mm) for every panel: each keeps its physical aspect and size.
  double longest = 0;
  for (int a = 0; a < 3; ++a) longest = std::max(longest, static_cast<double>(n[a]) * in.spacing[a]);
  const double px_per_mm = kLongestPanel / longest;
  auto extent = [&](int axis) {
    return std::max(1, static_cast<int>(std::lround(static_cast<double>(n[axis]) * in.spacing[axis] * px_per_mm)));
  };
  int label_width = 0;
  const bool has_labels = in.labels.data != nullptr;
  for (int c = 0; c < kColumns; ++c) f.cell_width = std::max(f.cell_width, text_width(column_name(c, has_labels)));
  for (int r = 0; r < 3; ++r) {
    const auto& p = f.planes[r];
    L.row_names[r] = p.name;
    L.row_normal[r] = p.normal;
    f.cell_width = std::max(f.cell_width, extent(p.across));
    label_width = std::max({label_width, text_width(p.name), text_width(slice_label(p, L.centre))});
  }
  f.left = kPad + label_width + kPad;
  f.header_y = kPad + (in.title.empty() ? 0 : kLineHeight + kPad);
  int y = f.header_y + kLineHeight;
  const int rows_top = y;
  for (int r = 0; r < 3; ++r) {
    const int width = extent(f.planes[r].across), height = extent(f.planes[r].down);
    const int row_height = std::max(height, 2 * kLineHeight);
    f.row_top[r] = y;
    for (int c = 0; c < kColumns; ++c) {
      const int x = f.left + c * (f.cell_width + kPad) + (f.cell_width - width) / 2;
      L.panels[r][c] = {x, y + (row_height - height) / 2, width, height};
    }
    y += row_height + kPad;
  }
  const int rows_bottom = y - kPad;
  const int bar_x = f.left + kColumns * (f.cell_width + kPad);
  L.width = bar_x + kBarWidth + kPad + text_width(std::string(kBarLabelChars, '0')) + kPad;
  // The bar from the first row's top to above the folding colour's swatch.
  const int bar_top = rows_top + kLineHeight / 2;
  L.colour_bar = {bar_x, bar_top, kBarWidth, std::max(kLineHeight, rows_bottom - bar_top - 2 * kLineHeight)};
  L.caption_lines = detail::wrap(detail::to_ascii(in.caption), (L.width - 2 * kPad) / kCharWidth);
  if (!in.warning.empty()) {
    const std::vector<std::string> warning = detail::wrap(detail::to_ascii(in.warning), (L.width - 2 * kPad) / kCharWidth);
    L.caption_lines.insert(L.caption_lines.end(), warning.begin(), warning.end());
    L.warning_lines = warning.size();
  }
  L.caption = {0, rows_bottom + kPad, L.width, 2 * kPad + static_cast<int>(L.caption_lines.size()) * kLineHeight};
  L.height = L.caption.y + L.caption.height;
  return f;
}

// Sets every pixel of panel r: colour(pixel index, x, y).
template <typename F>
void paint(Canvas& canvas, const Rect& r, F colour) {
  for (int y = 0; y < r.height; ++y) {
    for (int x = 0; x < r.width; ++x) canvas.set(r.x + x, r.y + y, colour(static_cast<size_t>(y) * r.width + x, x, y));
  }
}

// Pixels of a non-zero label with a 4-neighbour of another label.
std::vector<bool> label_outline(const std::vector<int32_t>& label, int width, int height) {
  std::vector<bool> out(label.size(), false);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const size_t i = static_cast<size_t>(y) * width + x;
      if (label[i] == 0) continue;
      out[i] = (x > 0 && label[i - 1] != label[i]) || (x + 1 < width && label[i + 1] != label[i]) ||
               (y > 0 && label[i - width] != label[i]) || (y + 1 < height && label[i + width] != label[i]);
    }
  }
  return out;
}

// Pixels where the (windowed) image's gradient magnitude is large.
std::vector<bool> edges(const std::vector<float>& grey, int width, int height) {
  auto at = [&](int x, int y) {
    return grey[static_cast<size_t>(std::clamp(y, 0, height - 1)) * width + std::clamp(x, 0, width - 1)];
  };
  std::vector<float> magnitude(grey.size()), finite;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const float m = std::hypot(at(x + 1, y) - at(x - 1, y), at(x, y + 1) - at(x, y - 1));
      magnitude[static_cast<size_t>(y) * width + x] = m;
      if (std::isfinite(m) && m > 0) finite.push_back(m);
    }
  }
  const float threshold = std::max(1e-3f, kEdgeFraction * detail::quantile(finite, 0.99));  // NaN: 1e-3
  std::vector<bool> out(grey.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = magnitude[i] > threshold;
  return out;
}

bool folded(float log_j) { return std::isnan(log_j) || log_j == -INFINITY; }

// s = max(0.1, 99th percentile of |log J| over the three slices).
float jacobian_scale(const std::array<std::vector<float>, 3>& slices) {
  std::vector<float> magnitudes;
  for (const auto& s : slices) {
    for (float v : s) {
      if (std::isfinite(v)) magnitudes.push_back(std::abs(v));
    }
  }
  const float p99 = detail::quantile(magnitudes, 0.99);
  return std::isfinite(p99) ? std::max(kMinJacobianScale, p99) : kMinJacobianScale;
}

void draw_centred(Canvas& canvas, const Rect& r, const std::string& text, Rgb colour) {
  canvas.text(r.x + (r.width - text_width(text)) / 2, r.y + (r.height - kTextHeight) / 2, text, colour);
}

// What every row's drawing shares: the grey windows and the log|J| scale.
struct Scales {
  detail::Window fixed, warped;
  float log_j = kMinJacobianScale;
};

void draw_row(Canvas& canvas, const Frame& f, int row, const PictureInputs& in, const std::vector<float>& log_j,
              const Scales& scales) {
  const auto& panels = f.layout.panels[row];
  const detail::PanelGrid grid{f.planes[row], in.fixed.size, f.layout.centre, panels[0].width, panels[0].height};
  std::vector<float> fixed = detail::sample_linear(in.fixed.data, grid);
  std::vector<float> warped = detail::sample_linear(in.warped.data, grid);
  for (float& v : fixed) v = scales.fixed(v);
  for (float& v : warped) v = scales.warped(v);

  paint(canvas, panels[kFixed], [&](size_t i, int, int) { return detail::grey(fixed[i]); });
  paint(canvas, panels[kWarped], [&](size_t i, int, int) { return detail::grey(warped[i]); });
  const int square = std::max(1, (std::max(grid.width, grid.height) + kCheckerSquares - 1) / kCheckerSquares);
  paint(canvas, panels[kCheckerboard], [&](size_t i, int x, int y) {
    return detail::grey((x / square + y / square) % 2 == 0 ? fixed[i] : warped[i]);
  });

  std::vector<int32_t> labels;
  std::vector<bool> marked;
  if (in.labels.data != nullptr) {
    labels = detail::sample_nearest(in.labels.data, grid);
    marked = label_outline(labels, grid.width, grid.height);
  } else {
    marked = edges(warped, grid.width, grid.height);
  }
  paint(canvas, panels[kOverlay], [&](size_t i, int, int) {
    if (!marked[i]) return detail::grey(fixed[i]);
    return labels.empty() ? kEdgeColour : label_colour(labels[i]);
  });

  if (log_j.empty()) {
    canvas.fill(panels[kLogJacobian], kNoData);
    draw_centred(canvas, panels[kLogJacobian], "n/a", kText);
  } else {
    paint(canvas, panels[kLogJacobian], [&](size_t i, int, int) {
      return folded(log_j[i]) ? kFoldingColour : detail::diverging(log_j[i] / scales.log_j);
    });
  }

  // Where the patient's directions are, on the fixed panel.
  const auto& edges_of = f.planes[row].edges;
  if (edges_of[0] != 0) {
    const Rect& p = panels[kFixed];
    const int gw = detail::kGlyphWidth * detail::kTextScale, gh = kTextHeight;
    canvas.text(p.x + (p.width - gw) / 2, p.y + 2, std::string(1, edges_of[0]), kOrientation);
    canvas.text(p.x + (p.width - gw) / 2, p.y + p.height - gh - 2, std::string(1, edges_of[1]), kOrientation);
    canvas.text(p.x + 2, p.y + (p.height - gh) / 2, std::string(1, edges_of[2]), kOrientation);
    canvas.text(p.x + p.width - gw - 2, p.y + (p.height - gh) / 2, std::string(1, edges_of[3]), kOrientation);
  }
}

// Title, column headers, row labels, the colour bar and the caption.
void draw_text(Canvas& canvas, const Frame& f, const PictureInputs& in, bool has_jacobian, float scale) {
  const PictureLayout& L = f.layout;
  if (!in.title.empty()) canvas.text(kPad, kPad, detail::to_ascii(in.title), kText);
  for (int c = 0; c < kColumns; ++c) {
    const std::string name = column_name(c, in.labels.data != nullptr);
    const int x = f.left + c * (f.cell_width + kPad) + (f.cell_width - text_width(name)) / 2;
    canvas.text(x, f.header_y, name, kText);
  }
  for (int r = 0; r < 3; ++r) {
    canvas.text(kPad, f.row_top[r], f.planes[r].name, kText);
    canvas.text(kPad, f.row_top[r] + kLineHeight, slice_label(f.planes[r], L.centre), kDimText);
  }
  if (has_jacobian) {
    const Rect& bar = L.colour_bar;
    for (int y = 0; y < bar.height; ++y) {
      const float t = 1.0f - 2.0f * (static_cast<float>(y) + 0.5f) / static_cast<float>(bar.height);
      canvas.fill({bar.x, bar.y + y, bar.width, 1}, detail::diverging(t));
    }
    char value[32];
    std::snprintf(value, sizeof value, "%.3g", static_cast<double>(scale));
    const int text_x = bar.x + bar.width + kPad / 2, half_glyph = kTextHeight / 2;
    canvas.text(text_x, bar.y - half_glyph, std::string("+") + value, kText);
    canvas.text(text_x, bar.y + bar.height / 2 - half_glyph, "0", kText);
    canvas.text(text_x, bar.y + bar.height - half_glyph, std::string("-") + value, kText);
    const Rect swatch{bar.x, bar.y + bar.height + kLineHeight, bar.width, bar.width};
    canvas.fill(swatch, kFoldingColour);
    canvas.text(text_x, swatch.y + (swatch.height - 2 * half_glyph) / 2, "fold", kText);
  }
  canvas.fill(L.caption, kCaptionBackground);
  for (size_t i = 0; i < L.caption_lines.size(); ++i) {
    const bool warning = i + L.warning_lines >= L.caption_lines.size();
    canvas.text(kPad, L.caption.y + kPad + static_cast<int>(i) * kLineHeight, L.caption_lines[i],
                warning ? kWarningColour : kText);
  }
}

}  // namespace

PictureLayout picture_layout(const PictureInputs& in) { return make_frame(in).layout; }

void write_picture(const std::string& path, const PictureInputs& in) {
  const Frame f = make_frame(in);
  Canvas canvas(f.layout.width, f.layout.height, kBackground);
  std::array<std::vector<float>, 3> log_j;
  Scales scales{detail::grey_window(in.fixed), detail::grey_window(in.warped)};
  if (in.log_jacobian.data != nullptr) {
    for (int r = 0; r < 3; ++r) {
      const Rect& p = f.layout.panels[r][kLogJacobian];
      log_j[r] = detail::sample_nearest(in.log_jacobian.data,
                                        {f.planes[r], in.fixed.size, f.layout.centre, p.width, p.height});
    }
    scales.log_j = jacobian_scale(log_j);
  }
  draw_text(canvas, f, in, in.log_jacobian.data != nullptr, scales.log_j);
  for (int r = 0; r < 3; ++r) draw_row(canvas, f, r, in, log_j[r], scales);
  canvas.write_png(path);
}

}  // namespace autoreg::qc
