#include "canvas.h"

#include <itkImage.h>
#include <itkImageFileWriter.h>
#include <itkPNGImageIO.h>
#include <itkRGBPixel.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "autoreg/base/atomic_file.h"

namespace autoreg::qc::detail {

Canvas::Canvas(int width, int height, Rgb background)
    : width_(width), height_(height), pixels_(static_cast<size_t>(width) * height, background) {}

void Canvas::set(int x, int y, Rgb c) {
  if (x >= 0 && y >= 0 && x < width_ && y < height_) pixels_[static_cast<size_t>(y) * width_ + x] = c;
}

void Canvas::fill(const Rect& r, Rgb c) {
  for (int y = r.y; y < r.y + r.height; ++y) {
    for (int x = r.x; x < r.x + r.width; ++x) set(x, y, c);
  }
}

void Canvas::text(int x, int y, const std::string& ascii, Rgb c, int scale) {
  for (size_t i = 0; i < ascii.size(); ++i) {
    const int left = x + static_cast<int>(i) * (kGlyphWidth + 1) * scale;
    for (int gy = 0; gy < kGlyphHeight; ++gy) {
      for (int gx = 0; gx < kGlyphWidth; ++gx) {
        if (glyph_lit(ascii[i], gx, gy)) fill({left + gx * scale, y + gy * scale, scale, scale}, c);
      }
    }
  }
}

void Canvas::write_png(const std::string& path) const {
  using Pixel = itk::RGBPixel<unsigned char>;
  using Image = itk::Image<Pixel, 2>;
  auto image = Image::New();
  Image::SizeType size;
  size[0] = static_cast<itk::SizeValueType>(width_);
  size[1] = static_cast<itk::SizeValueType>(height_);
  image->SetRegions(Image::RegionType(size));
  image->Allocate();
  Pixel* out = image->GetBufferPointer();
  for (size_t i = 0; i < pixels_.size(); ++i) out[i].Set(pixels_[i].r, pixels_[i].g, pixels_[i].b);

  base::write_atomically(path, [&](const std::string& tmp) {
    auto writer = itk::ImageFileWriter<Image>::New();
    writer->SetImageIO(itk::PNGImageIO::New());
    writer->SetFileName(tmp);
    writer->SetInput(image);
    try {
      writer->Update();
    } catch (const itk::ExceptionObject& e) {
      throw base::WriteError(path + ": cannot write the PNG (" + e.GetDescription() + ")");
    }
  });
}

std::string to_ascii(const std::string& utf8) {
  std::string out;
  for (size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out += c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c);
      ++i;
      continue;
    }
    if (utf8.compare(i, 3, "\xe2\x86\x92") == 0) {  // U+2192 RIGHTWARDS ARROW
      out += "->";
      i += 3;
      continue;
    }
    out += '?';  // one per character: skip its continuation bytes
    for (++i; i < utf8.size() && (static_cast<unsigned char>(utf8[i]) & 0xc0) == 0x80; ++i) {
    }
  }
  return out;
}

std::vector<std::string> wrap(const std::string& ascii, int columns) {
  std::vector<std::string> lines;
  const size_t width = static_cast<size_t>(std::max(columns, 1));
  std::string rest = ascii;
  while (rest.size() > width) {
    size_t cut = rest.rfind(' ', width);
    if (cut == std::string::npos || cut == 0) cut = width;
    lines.push_back(rest.substr(0, cut));
    rest = rest.substr(rest[cut] == ' ' ? cut + 1 : cut);
  }
  if (!rest.empty()) lines.push_back(rest);
  return lines;
}

namespace {
uint8_t byte(float v) {
  if (!(v > 0.0f)) return 0;  // NaN too
  return static_cast<uint8_t>(std::lround(std::min(v, 1.0f) * 255.0f));
}
}  // namespace

Rgb grey(float v) {
  const uint8_t g = byte(v);
  return {g, g, g};
}

Rgb diverging(float t) {
  t = std::clamp(t, -1.0f, 1.0f);
  if (t < 0) return {byte(1 + t), byte(1 + t), 255};  // white → blue
  return {255, byte(1 - t), byte(1 - t)};              // white → red
}

}  // namespace autoreg::qc::detail

namespace autoreg::qc {

Rgb label_colour(int32_t label) {
  // Sasha Trubetskoy's distinct colours, less the greens (the folding colour) and greys.
  static constexpr Rgb kPalette[] = {
      {230, 25, 75},  {0, 130, 200},   {255, 225, 25},  {245, 130, 48},  {145, 30, 180}, {70, 240, 240},
      {240, 50, 230}, {250, 190, 212}, {0, 128, 128},   {220, 190, 255}, {170, 110, 40}, {128, 0, 0},
      {128, 128, 0},  {0, 0, 128},     {255, 215, 180}, {60, 180, 255}};
  constexpr uint32_t kCount = sizeof kPalette / sizeof kPalette[0];
  // A multiplicative hash: neighbouring label values get unrelated colours.
  const uint32_t h = static_cast<uint32_t>(label) * 2654435761u;
  return kPalette[(h >> 16) % kCount];
}

}  // namespace autoreg::qc
