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
  check_matches("fixed image's field of view", in.fixed_inside.data, in.fixed_inside.size, in.fixed.size);
  check_matches("warped image's field of view", in.warped_inside.data, in.warped_inside.size, in.fixed.size);
}

// "-160..240": a window's ends as the caption writes them.
std::string range_text(const detail::Window& w) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4g..%.4g", static_cast<double>(w.lo), static_cast<double>(w.hi));
  return text;
}

// The caption's line of grey windows (and the field of view's colour), or "" when the
// inputs name no window and give no field of view.
std::string window_line(const PictureInputs& in, const detail::Window& fixed, const detail::Window& warped) {
  const bool fov = in.fixed_inside.data != nullptr || in.warped_inside.data != nullptr;
  if (in.fixed_window.name.empty() && in.warped_window.name.empty() && !fov) return "";
  const auto part = [](const char* what, const detail::Window& w, const std::string& name) {
    return std::string(what) + " " + range_text(w) + (name.empty() ? "" : " (" + name + ")");
  };
  return "grey: " + part("fixed", fixed, in.fixed_window.name) + ";  " + part("moving", warped, in.warped_window.name) +
         (fov ? ";  blue line: the field of view's edge" : "");
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
  detail::Window fixed_window, warped_window;
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
    std::array<int64_t, 3> centre{-1, -1, -1};
    if (in.labels.data != nullptr) centre = detail::label_centre(in.labels);
    if (centre[0] == -1) centre = detail::foreground_centre(in.fixed, in.fixed_inside);
    for (int a = 0; a < 3; ++a) L.centre[a] = in.centre[a] == -1 ? centre[a] : in.centre[a];
  }
  f.fixed_window = detail::grey_window(in.fixed, in.fixed_window, in.fixed_inside);
  f.warped_window = detail::grey_window(in.warped, in.warped_window, in.warped_inside);
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
  const std::string windows = window_line(in, f.fixed_window, f.warped_window);
  if (!windows.empty()) {
    const std::vector<std::string> lines = detail::wrap(windows, (L.width - 2 * kPad) / kCharWidth);
    L.caption_lines.insert(L.caption_lines.end(), lines.begin(), lines.end());
  }
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
template <typename T>
std::vector<bool> label_outline(const std::vector<T>& label, int width, int height) {
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

// The fields of view on one row's panels, each sampled once: where each image has data
// and its edge (empty without its mask), and where both have data (empty: everywhere).
struct RowMasks {
  std::vector<uint8_t> fixed_in, warped_in;
  std::vector<bool> fixed_edge, warped_edge, shown;
};

RowMasks row_masks(const PictureInputs& in, const detail::PanelGrid& grid) {
  RowMasks m;
  const auto sample = [&](const MaskView& v, std::vector<uint8_t>& inside, std::vector<bool>& edge) {
    if (v.data == nullptr) return;
    inside = detail::sample_nearest(v.data, grid);
    edge = label_outline(inside, grid.width, grid.height);
  };
  sample(in.fixed_inside, m.fixed_in, m.fixed_edge);
  sample(in.warped_inside, m.warped_in, m.warped_edge);
  if (m.fixed_in.empty() && m.warped_in.empty()) return m;
  m.shown.assign(static_cast<size_t>(grid.width) * grid.height, true);
  for (const std::vector<uint8_t>* inside : {&m.fixed_in, &m.warped_in}) {
    for (size_t i = 0; i < inside->size(); ++i) m.shown[i] = m.shown[i] && (*inside)[i] != 0;
  }
  return m;
}

// s = max(0.1, 99th percentile of |log J| over the three slices, where both images have
// data: `shown` empty or true).
float jacobian_scale(const std::array<std::vector<float>, 3>& slices, const std::array<RowMasks, 3>& masks) {
  std::vector<float> magnitudes;
  for (size_t r = 0; r < slices.size(); ++r) {
    for (size_t i = 0; i < slices[r].size(); ++i) {
      const std::vector<bool>& shown = masks[r].shown;
      if (std::isfinite(slices[r][i]) && (shown.empty() || shown[i])) magnitudes.push_back(std::abs(slices[r][i]));
    }
  }
  const float p99 = detail::quantile(magnitudes, 0.99);
  return std::isfinite(p99) ? std::max(kMinJacobianScale, p99) : kMinJacobianScale;
}

void draw_centred(Canvas& canvas, const Rect& r, const std::string& text, Rgb colour) {
  canvas.text(r.x + (r.width - text_width(text)) / 2, r.y + (r.height - kTextHeight) / 2, text, colour);
}

// The panel of row `row` (its grid) for sampling.
detail::PanelGrid panel_grid(const Frame& f, int row, const PictureInputs& in) {
  const Rect& p = f.layout.panels[row][0];
  return {f.planes[row], in.fixed.size, f.layout.centre, p.width, p.height};
}

// `base`'s colour, or the field of view's where `edge` marks the pixel.
Rgb with_edge(const std::vector<bool>& edge, size_t i, Rgb base) { return !edge.empty() && edge[i] ? kFieldOfViewColour : base; }

void draw_row(Canvas& canvas, const Frame& f, int row, const PictureInputs& in, const std::vector<float>& log_j,
              const RowMasks& masks, float log_j_scale) {
  const auto& panels = f.layout.panels[row];
  const detail::PanelGrid grid = panel_grid(f, row, in);
  std::vector<float> fixed = detail::sample_linear(in.fixed.data, grid);
  std::vector<float> warped = detail::sample_linear(in.warped.data, grid);
  for (float& v : fixed) v = f.fixed_window(v);
  for (float& v : warped) v = f.warped_window(v);
  const std::vector<bool>& fixed_edge = masks.fixed_edge;
  const std::vector<bool>& warped_edge = masks.warped_edge;
  const std::vector<bool>& shown = masks.shown;
  // Outside an image's data: the no-data grey, not its window's colour for the padding.
  const auto fixed_grey = [&](size_t i) {
    return masks.fixed_in.empty() || masks.fixed_in[i] ? detail::grey(fixed[i]) : kNoDataColour;
  };
  const auto warped_grey = [&](size_t i) {
    return masks.warped_in.empty() || masks.warped_in[i] ? detail::grey(warped[i]) : kNoDataColour;
  };

  paint(canvas, panels[kFixed], [&](size_t i, int, int) { return with_edge(fixed_edge, i, fixed_grey(i)); });
  paint(canvas, panels[kWarped], [&](size_t i, int, int) { return with_edge(warped_edge, i, warped_grey(i)); });
  const int square = std::max(1, (std::max(grid.width, grid.height) + kCheckerSquares - 1) / kCheckerSquares);
  paint(canvas, panels[kCheckerboard], [&](size_t i, int x, int y) {
    return with_edge(fixed_edge, i, (x / square + y / square) % 2 == 0 ? fixed_grey(i) : warped_grey(i));
  });

  std::vector<int32_t> labels;
  std::vector<bool> marked;
  if (in.labels.data != nullptr) {
    labels = detail::sample_nearest(in.labels.data, grid);
    marked = label_outline(labels, grid.width, grid.height);
  } else {
    marked = edges(warped, grid.width, grid.height);
    for (size_t i = 0; i < marked.size() && !shown.empty(); ++i) marked[i] = marked[i] && shown[i];  // where both have data
  }
  paint(canvas, panels[kOverlay], [&](size_t i, int, int) {
    if (!marked[i]) return with_edge(fixed_edge, i, fixed_grey(i));
    return labels.empty() ? kEdgeColour : label_colour(labels[i]);
  });

  if (log_j.empty()) {
    canvas.fill(panels[kLogJacobian], kNoDataColour);
    draw_centred(canvas, panels[kLogJacobian], "n/a", kText);
  } else {
    paint(canvas, panels[kLogJacobian], [&](size_t i, int, int) {
      if (!shown.empty() && !shown[i]) return kNoDataColour;  // the field means nothing where an image has no data
      return folded(log_j[i]) ? kFoldingColour : detail::diverging(log_j[i] / log_j_scale);
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
  std::array<RowMasks, 3> masks;
  float log_j_scale = kMinJacobianScale;
  for (int r = 0; r < 3; ++r) masks[r] = row_masks(in, panel_grid(f, r, in));
  if (in.log_jacobian.data != nullptr) {
    for (int r = 0; r < 3; ++r) log_j[r] = detail::sample_nearest(in.log_jacobian.data, panel_grid(f, r, in));
    log_j_scale = jacobian_scale(log_j, masks);
  }
  draw_text(canvas, f, in, in.log_jacobian.data != nullptr, log_j_scale);
  for (int r = 0; r < 3; ++r) draw_row(canvas, f, r, in, log_j[r], masks[r], log_j_scale);
  canvas.write_png(path);
}

}  // namespace autoreg::qc
