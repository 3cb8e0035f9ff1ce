// Internal to qc/: an RGB picture being drawn, its text and colours, and its PNG file.
#pragma once

#include <string>
#include <vector>

#include "autoreg/qc/picture.h"
#include "font.h"

namespace autoreg::qc::detail {

inline constexpr int kTextScale = 2;  // screen pixels per font cell: 10×14 glyphs
inline constexpr int kCharWidth = (kGlyphWidth + 1) * kTextScale;   // advance, with a gap
inline constexpr int kLineHeight = (kGlyphHeight + 1) * kTextScale;  // with a gap below
inline constexpr int kTextHeight = (kGlyphHeight - 1) * kTextScale;  // above the baseline: for centring

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);
  int width() const { return width_; }
  int height() const { return height_; }
  Rgb at(int x, int y) const { return pixels_[static_cast<size_t>(y) * width_ + x]; }
  void set(int x, int y, Rgb c);  // ignores pixels outside
  void fill(const Rect& r, Rgb c);
  // ASCII text with its top-left corner at (x, y) (to_ascii first for other text).
  void text(int x, int y, const std::string& ascii, Rgb c, int scale = kTextScale);
  // As an 8-bit RGB PNG through ITK, atomically; std::runtime_error naming `path`.
  void write_png(const std::string& path) const;

 private:
  int width_, height_;
  std::vector<Rgb> pixels_;  // row-major, top row first
};

inline int text_width(const std::string& ascii, int scale = kTextScale) {
  return static_cast<int>(ascii.size()) * (kGlyphWidth + 1) * scale - scale;
}

// Caption and title text as the font can draw it: UTF-8 "→" becomes "->", any other
// non-ASCII character (a whole UTF-8 sequence) '?', control characters a space.
std::string to_ascii(const std::string& utf8);
// Lines of at most `columns` characters, broken at spaces where a line has one.
std::vector<std::string> wrap(const std::string& ascii, int columns);

// Colour maps: grey for v in [0, 1]; blue-white-red for t in [-1, 1].
Rgb grey(float v);
Rgb diverging(float t);

}  // namespace autoreg::qc::detail
