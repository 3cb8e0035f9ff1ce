// Quality-control pictures: the PNG read back through ITK has the layout's size, the
// planes are oriented by the axis letters and keep their physical aspect, every overlay
// draws what it should; index.html lists rows worst first, escaped, with its load check.
#include <gtest/gtest.h>
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkPNGImageIO.h>
#include <itkRGBPixel.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "autoreg/qc/picture.h"
#include "canvas.h"  // detail: to_ascii
#include "font.h"    // detail: the glyph table

namespace qc = autoreg::qc;
namespace fs = std::filesystem;

namespace {

using Size = std::array<int64_t, 3>;

template <typename T>
std::vector<T> make_volume(const Size& n, const std::function<T(int64_t, int64_t, int64_t)>& f) {
  std::vector<T> v(static_cast<size_t>(n[0] * n[1] * n[2]));
  size_t i = 0;
  for (int64_t d = 0; d < n[0]; ++d)
    for (int64_t h = 0; h < n[1]; ++h)
      for (int64_t w = 0; w < n[2]; ++w) v[i++] = f(d, h, w);
  return v;
}

double squared_distance(double d, double h, double w, const std::array<double, 3>& c) {
  return (d - c[0]) * (d - c[0]) + (h - c[1]) * (h - c[1]) + (w - c[2]) * (w - c[2]);
}

struct Picture {
  int width = 0, height = 0;
  std::vector<qc::Rgb> pixels;
  qc::Rgb at(int x, int y) const { return pixels[static_cast<size_t>(y) * width + x]; }
  // How many pixels of `r` satisfy `p`.
  int count(const qc::Rect& r, const std::function<bool(qc::Rgb)>& p) const {
    int n = 0;
    for (int y = r.y; y < r.y + r.height; ++y)
      for (int x = r.x; x < r.x + r.width; ++x) n += p(at(x, y)) ? 1 : 0;
    return n;
  }
};

Picture read_png(const std::string& path) {
  using Image = itk::Image<itk::RGBPixel<unsigned char>, 2>;
  auto reader = itk::ImageFileReader<Image>::New();
  reader->SetImageIO(itk::PNGImageIO::New());
  reader->SetFileName(path);
  reader->Update();
  const Image* image = reader->GetOutput();
  const auto size = image->GetLargestPossibleRegion().GetSize();
  Picture p{static_cast<int>(size[0]), static_cast<int>(size[1]), {}};
  const auto* px = image->GetBufferPointer();
  for (size_t i = 0; i < size[0] * size[1]; ++i) p.pixels.push_back({px[i][0], px[i][1], px[i][2]});
  return p;
}

bool is_grey(qc::Rgb c) { return c.r == c.g && c.g == c.b; }
bool is_blue(qc::Rgb c) { return c.b > 200 && c.r < 120 && c.g < 120; }
bool is_red(qc::Rgb c) { return c.r > 200 && c.g < 120 && c.b < 120; }
bool is_text(qc::Rgb c) { return c.r > 200 && c.g > 200 && c.b > 200; }

// The centroid of the bright grey pixels of a panel, relative to its centre, in units of
// its half-size: (-1, -1) is the top-left corner.
std::array<double, 2> bright_centroid(const Picture& p, const qc::Rect& r) {
  double sx = 0, sy = 0, n = 0;
  for (int y = r.y; y < r.y + r.height; ++y)
    for (int x = r.x; x < r.x + r.width; ++x)
      if (is_grey(p.at(x, y)) && p.at(x, y).r > 128) sx += x, sy += y, ++n;
  EXPECT_GT(n, 0) << "no bright pixels in the panel";
  return {(sx / n - r.x - r.width / 2.0) / (r.width / 2.0), (sy / n - r.y - r.height / 2.0) / (r.height / 2.0)};
}

class QcPicture : public ::testing::Test {
 protected:
  // 40×48×36: a head-like ellipsoid with a brighter core; the warped image moved by 2
  // voxels; labels 3 and 7 left and right of the centre; log|J| rising along w and d
  // (±0.5 along each) with a folded (NaN) block at the centre and one -inf voxel.
  const Size n{40, 48, 36};
  std::vector<float> fixed = make_volume<float>(n, [](int64_t d, int64_t h, int64_t w) {
    const double e = std::pow((d - 20) / 15.0, 2) + std::pow((h - 24) / 19.0, 2) + std::pow((w - 18) / 14.0, 2);
    return e < 1 ? (e < 0.3 ? 200.0f : 100.0f) : 0.0f;
  });
  std::vector<float> warped = make_volume<float>(n, [this](int64_t d, int64_t h, int64_t w) {
    return fixed[static_cast<size_t>((d * n[1] + std::min<int64_t>(h + 2, n[1] - 1)) * n[2] + w)];
  });
  std::vector<int32_t> labels = make_volume<int32_t>(n, [](int64_t d, int64_t h, int64_t w) {
    if (squared_distance(d, h, w, {20, 24, 11}) < 25) return 3;
    if (squared_distance(d, h, w, {20, 24, 25}) < 25) return 7;
    return 0;
  });
  std::vector<float> log_j = make_volume<float>(n, [](int64_t d, int64_t h, int64_t w) {
    if (std::abs(d - 20) <= 1 && std::abs(h - 24) <= 1 && std::abs(w - 18) <= 1) return std::nanf("");
    if (d == 20 && h == 24 && w == 21) return -INFINITY;
    return static_cast<float>((w - 17.5) / 35.0 + (d - 19.5) / 39.0);
  });
  fs::path dir;

  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("autoreg_qc_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  qc::PictureInputs inputs() const {
    qc::PictureInputs in;
    in.fixed = {fixed.data(), n};
    in.warped = {warped.data(), n};
    in.labels = {labels.data(), n};
    in.log_jacobian = {log_j.data(), n};
    in.caption = "oasis01 \xe2\x86\x92 oasis06  Dice 0.612  folding 0.000%  logJ sd 0.21  12.3 s";
    in.title = "oasis01_oasis06";
    return in;
  }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
  }
};

TEST_F(QcPicture, LayoutPanelsAndOverlays) {
  const qc::PictureInputs in = inputs();
  const std::string path = (dir / "pair.png").string();
  qc::write_picture(path, in);
  EXPECT_EQ(files(), std::vector<std::string>{"pair.png"});  // no temporary left behind

  const qc::PictureLayout layout = qc::picture_layout(in);
  const Picture p = read_png(path);
  ASSERT_EQ(p.width, layout.width);
  ASSERT_EQ(p.height, layout.height);
  EXPECT_EQ(layout.row_names, (std::array<std::string, 3>{"axial", "coronal", "sagittal"}));
  EXPECT_EQ(layout.row_normal, (std::array<int, 3>{0, 1, 2}));
  EXPECT_EQ(layout.centre, (Size{20, 24, 18}));  // the foreground's centroid
  // The longest physical side (48 voxels of 1 mm along H) is 240 px.
  EXPECT_EQ(layout.panels[0][qc::kFixed].height, 240);
  EXPECT_EQ(layout.panels[0][qc::kFixed].width, 180);

  for (int r = 0; r < 3; ++r) {
    const auto& panels = layout.panels[r];
    // The checkerboard is made of the fixed and the warped panels' pixels, some of each.
    int from_fixed = 0, from_warped = 0;
    for (int y = 0; y < panels[qc::kFixed].height; ++y) {
      for (int x = 0; x < panels[qc::kFixed].width; ++x) {
        const qc::Rgb c = p.at(panels[qc::kCheckerboard].x + x, panels[qc::kCheckerboard].y + y);
        const qc::Rgb f = p.at(panels[qc::kFixed].x + x, panels[qc::kFixed].y + y);
        const qc::Rgb w = p.at(panels[qc::kWarped].x + x, panels[qc::kWarped].y + y);
        from_fixed += c == f && c != w;
        from_warped += c == w && c != f;
      }
    }
    EXPECT_GT(from_fixed, 0) << "row " << r;
    EXPECT_GT(from_warped, 0) << "row " << r;
    // log|J|: both ends of the diverging map and the folding colour on every plane
    // (the folded block is at the centre every plane passes through).
    EXPECT_GT(p.count(panels[qc::kLogJacobian], is_blue), 0) << "row " << r;
    EXPECT_GT(p.count(panels[qc::kLogJacobian], is_red), 0) << "row " << r;
    EXPECT_GT(p.count(panels[qc::kLogJacobian], [](qc::Rgb c) { return c == qc::kFoldingColour; }), 0) << "row " << r;
  }
  // Both labels cross the axial and coronal planes: their outlines in their colours.
  for (int r : {0, 1}) {
    for (int32_t label : {3, 7}) {
      const qc::Rgb colour = qc::label_colour(label);
      EXPECT_GT(p.count(layout.panels[r][qc::kOverlay], [&](qc::Rgb c) { return c == colour; }), 10)
          << "row " << r << " label " << label;
    }
  }
  EXPECT_NE(qc::label_colour(3), qc::label_colour(7));
  // The caption's text.
  EXPECT_EQ(layout.caption_lines,
            std::vector<std::string>{"oasis01 -> oasis06  Dice 0.612  folding 0.000%  logJ sd 0.21  12.3 s"});
  EXPECT_GT(p.count(layout.caption, is_text), 200);
  // The colour bar: red at the top, blue at the bottom.
  const qc::Rect& bar = layout.colour_bar;
  EXPECT_TRUE(is_red(p.at(bar.x + bar.width / 2, bar.y)));
  EXPECT_TRUE(is_blue(p.at(bar.x + bar.width / 2, bar.y + bar.height - 1)));
}

TEST_F(QcPicture, WithoutLabelsOrJacobianEdgesAndNa) {
  qc::PictureInputs in = inputs();
  in.labels = {};
  in.log_jacobian = {};
  in.caption.clear();
  const std::string path = (dir / "plain.png").string();
  qc::write_picture(path, in);
  const qc::PictureLayout layout = qc::picture_layout(in);
  const Picture p = read_png(path);
  ASSERT_EQ(p.width, layout.width);
  ASSERT_EQ(p.height, layout.height);
  EXPECT_TRUE(layout.caption_lines.empty());
  EXPECT_EQ(p.count(layout.caption, is_text), 0);
  for (int r = 0; r < 3; ++r) {
    const auto& panels = layout.panels[r];
    EXPECT_GT(p.count(panels[qc::kOverlay], [](qc::Rgb c) { return c == qc::kEdgeColour; }), 10) << "row " << r;
    EXPECT_EQ(p.count(panels[qc::kLogJacobian], [](qc::Rgb c) { return is_blue(c) || is_red(c); }), 0);
    EXPECT_GT(p.count(panels[qc::kLogJacobian], is_text), 0) << "row " << r << ": \"n/a\"";
  }
}

// With fields of view: outside each image's the no-data grey and its edge in blue, the
// log Jacobian only where both have data, the windows given and their caption line; with
// labels, the slices through their centroid.
TEST_F(QcPicture, FieldsOfViewWindowsAndTheLabelsCentre) {
  qc::PictureInputs in = inputs();
  const std::vector<uint8_t> fixed_inside = make_volume<uint8_t>(n, [](int64_t, int64_t, int64_t w) { return w < 18; });
  const std::vector<uint8_t> warped_inside = make_volume<uint8_t>(n, [](int64_t, int64_t h, int64_t) { return h >= 6; });
  in.fixed_inside = {fixed_inside.data(), n};
  in.warped_inside = {warped_inside.data(), n};
  in.fixed_window = {0, 400, "a test window"};
  const std::vector<int32_t> one_label = make_volume<int32_t>(n, [](int64_t d, int64_t h, int64_t w) {
    return squared_distance(d, h, w, {20, 24, 11}) < 25 ? 3 : 0;
  });
  in.labels = {one_label.data(), n};
  const std::string path = (dir / "fov.png").string();
  qc::write_picture(path, in);
  const qc::PictureLayout layout = qc::picture_layout(in);
  const Picture p = read_png(path);
  EXPECT_EQ(layout.centre, (Size{20, 24, 11}));  // the label's centre, not the foreground's
  const auto is = [](qc::Rgb colour) { return [colour](qc::Rgb c) { return c == colour; }; };
  // The axial and coronal rows cut the field of view's edge (w = 18).
  for (int r : {0, 1}) {
    const auto& panels = layout.panels[r];
    EXPECT_GT(p.count(panels[qc::kFixed], is(qc::kNoDataColour)), 100) << "row " << r;
    EXPECT_GT(p.count(panels[qc::kFixed], is(qc::kFieldOfViewColour)), 10) << "row " << r;
    EXPECT_GT(p.count(panels[qc::kLogJacobian], is(qc::kNoDataColour)), 100) << "row " << r;
    // No log|J| colour where the fixed image has none: the right half (patient's left,
    // the picture's right) of the axial panel, w >= 18.
    if (r == 0) {
      const qc::Rect& j = panels[qc::kLogJacobian];
      const qc::Rect right{j.x + j.width / 2 + 3, j.y, j.width / 2 - 3, j.height};
      EXPECT_EQ(p.count(right, [](qc::Rgb c) { return is_blue(c) || is_red(c) || c == qc::kFoldingColour; }), 0);
    }
  }
  // The sagittal row (w = 11) lies inside the fixed field of view; the warped one's edge (h = 6) crosses it.
  EXPECT_GT(p.count(layout.panels[2][qc::kWarped], is(qc::kFieldOfViewColour)), 10);
  ASSERT_FALSE(layout.caption_lines.empty());
  std::string caption;
  for (const auto& line : layout.caption_lines) caption += line + " ";
  EXPECT_NE(caption.find("grey: fixed 0..400 (a test window);  moving "), std::string::npos) << caption;
  EXPECT_NE(caption.find("blue line: the field of view's edge"), std::string::npos) << caption;
  // A wrong-sized mask is refused.
  in.fixed_inside = {fixed_inside.data(), {n[0], n[1], n[2] - 1}};
  EXPECT_THROW(qc::write_picture(path, in), std::invalid_argument);
}

// A bright cube at large d, small h, small w: superior, anterior and right with the
// default letters (S, P, L), so top-left on every plane in the radiological convention;
// with every letter reversed (I, A, R) it is inferior, posterior and left: bottom-right.
TEST_F(QcPicture, OrientationFollowsTheAxisLetters) {
  const std::vector<float> cube = make_volume<float>(n, [](int64_t d, int64_t h, int64_t w) {
    return d >= 30 && d < 36 && h >= 4 && h < 10 && w >= 4 && w < 10 ? 1.0f : 0.0f;
  });
  qc::PictureInputs in;
  in.fixed = in.warped = {cube.data(), n};
  in.centre = {33, 7, 7};
  for (const auto& [letters, sign] : {std::pair{std::array<char, 3>{'S', 'P', 'L'}, -1.0},
                                      std::pair{std::array<char, 3>{'i', 'a', 'r'}, 1.0}}) {
    in.axis_letters = letters;
    const std::string path = (dir / (std::string(letters.data(), 3) + ".png")).string();
    qc::write_picture(path, in);
    const Picture p = read_png(path);
    const qc::PictureLayout layout = qc::picture_layout(in);
    for (int r = 0; r < 3; ++r) {
      const auto c = bright_centroid(p, layout.panels[r][qc::kFixed]);
      EXPECT_GT(c[0] * sign, 0.3) << letters[0] << letters[1] << letters[2] << " row " << r;
      EXPECT_GT(c[1] * sign, 0.3) << letters[0] << letters[1] << letters[2] << " row " << r;
    }
  }
  // Axes in another order: the rows still are axial (⟂ S/I), coronal (⟂ A/P), sagittal.
  in.axis_letters = {'A', 'S', 'L'};
  EXPECT_EQ(qc::picture_layout(in).row_normal, (std::array<int, 3>{1, 0, 2}));
  // Letters that do not name three axes: the planes perpendicular to D, H, W.
  in.axis_letters = {'S', 'S', 'x'};
  const auto fallback = qc::picture_layout(in);
  EXPECT_EQ(fallback.row_normal, (std::array<int, 3>{0, 1, 2}));
  EXPECT_EQ(fallback.row_names[0], "plane D");
}

// A sphere of 12 mm on a grid of 2.5 × 1 × 0.8 mm voxels is round on every panel, and
// each panel's sides follow the grid's physical extents.
TEST_F(QcPicture, AnisotropicSpacingKeepsThePhysicalAspect) {
  const Size m{16, 48, 50};
  const std::array<double, 3> spacing{2.5, 1.0, 0.8};
  const std::vector<float> sphere = make_volume<float>(m, [&](int64_t d, int64_t h, int64_t w) {
    const double pd = (d + 0.5) * spacing[0] - 20, ph = (h + 0.5) * spacing[1] - 24, pw = (w + 0.5) * spacing[2] - 20;
    return pd * pd + ph * ph + pw * pw < 144 ? 1.0f : 0.0f;
  });
  qc::PictureInputs in;
  in.fixed = in.warped = {sphere.data(), m};
  in.spacing = spacing;
  const std::string path = (dir / "aniso.png").string();
  qc::write_picture(path, in);
  const Picture p = read_png(path);
  const qc::PictureLayout layout = qc::picture_layout(in);
  const std::array<double, 3> extent{m[0] * spacing[0], m[1] * spacing[1], m[2] * spacing[2]};  // 40, 48, 40 mm
  // axial: H down, W across; coronal and sagittal: D down, W or H across.
  const std::array<std::pair<int, int>, 3> axes{{{2, 1}, {2, 0}, {1, 0}}};
  for (int r = 0; r < 3; ++r) {
    const qc::Rect& panel = layout.panels[r][qc::kFixed];
    const double px_per_mm = 240.0 / 48.0;
    EXPECT_NEAR(panel.width, extent[axes[r].first] * px_per_mm, 1.0) << "row " << r;
    EXPECT_NEAR(panel.height, extent[axes[r].second] * px_per_mm, 1.0) << "row " << r;
    int left = panel.width, right = 0, top = panel.height, bottom = 0;
    for (int y = 0; y < panel.height; ++y) {
      for (int x = 0; x < panel.width; ++x) {
        const qc::Rgb c = p.at(panel.x + x, panel.y + y);
        if (is_grey(c) && c.r > 128) {
          left = std::min(left, x), right = std::max(right, x);
          top = std::min(top, y), bottom = std::max(bottom, y);
        }
      }
    }
    const double width = right - left + 1, height = bottom - top + 1;
    EXPECT_NEAR(width / height, 1.0, 0.12) << "row " << r << ": " << width << " x " << height;
    EXPECT_NEAR(width, 24 * px_per_mm, 0.15 * 24 * px_per_mm) << "row " << r;  // 24 mm across
  }
}

TEST_F(QcPicture, RefusesBadInputs) {
  const qc::PictureInputs good = inputs();
  const std::string path = (dir / "bad.png").string();
  auto refused = [&](const std::function<void(qc::PictureInputs&)>& spoil) {
    qc::PictureInputs in = good;
    spoil(in);
    EXPECT_THROW(qc::write_picture(path, in), std::invalid_argument);
    EXPECT_THROW(qc::picture_layout(in), std::invalid_argument);
  };
  refused([](qc::PictureInputs& in) { in.fixed.data = nullptr; });
  refused([](qc::PictureInputs& in) { in.warped.data = nullptr; });
  refused([](qc::PictureInputs& in) { in.warped.size = {40, 48, 35}; });
  refused([](qc::PictureInputs& in) { in.labels.size = {40, 47, 36}; });
  refused([](qc::PictureInputs& in) { in.log_jacobian.size = {39, 48, 36}; });
  refused([](qc::PictureInputs& in) { in.fixed.size = in.warped.size = {40, 0, 36}; });
  refused([](qc::PictureInputs& in) { in.spacing = {1, 0, 1}; });
  refused([](qc::PictureInputs& in) { in.centre = {20, 48, 18}; });
  EXPECT_TRUE(files().empty());

  // A file that cannot be written: the error names it, and no temporary is left.
  const std::string folder = (dir / "taken.png").string();
  fs::create_directory(folder);
  try {
    qc::write_picture(folder, good);
    ADD_FAILURE() << "writing onto a folder did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(folder + ": ", 0), 0u) << e.what();
  }
  EXPECT_EQ(files(), std::vector<std::string>{"taken.png"});
  EXPECT_THROW(qc::write_picture((dir / "missing" / "x.png").string(), good), std::runtime_error);
}

TEST_F(QcPicture, IndexHtmlWorstFirstEscapedWithLoadCheck) {
  auto row = [](std::string name, std::string status, double dice, double folding) {
    qc::IndexRow r;
    r.name = std::move(name);
    r.picture = r.name + ".png";
    r.status = std::move(status);
    r.dice = dice;
    r.folding_percent = folding;
    r.seconds = 12.5;
    return r;
  };
  std::vector<qc::IndexRow> rows{row("a", "ok", 0.8, 0.0), row("b", "failed", qc::kNoValue, qc::kNoValue),
                                 row("c", "ok", 0.6, 0.1), row("d", "ok", qc::kNoValue, 0.2),
                                 row("e", "ok", 0.6, 0.5)};
  rows[1].error = "<bad> & \"quoted\"";
  rows[0].picture = "pictures/a b#1.png";
  const std::string path = (dir / "index.html").string();
  qc::write_index_html(path, rows, "QC <batch>");
  EXPECT_EQ(files(), std::vector<std::string>{"index.html"});

  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string html = buffer.str();
  std::vector<std::string> order;
  const std::regex name_cell("<td class=\"name\">([^<]*)</td>");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), name_cell); it != std::sregex_iterator(); ++it) {
    order.push_back((*it)[1]);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"b", "e", "c", "a", "d"}));
  EXPECT_NE(html.find("&lt;bad&gt; &amp; &quot;quoted&quot;"), std::string::npos);
  EXPECT_EQ(html.find("<bad>"), std::string::npos);
  EXPECT_NE(html.find("<title>QC &lt;batch&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("id=\"qc-load-status\""), std::string::npos);
  EXPECT_NE(html.find("naturalWidth"), std::string::npos);
  EXPECT_NE(html.find("setAttribute('data-loaded'"), std::string::npos);
  EXPECT_NE(html.find("setAttribute('data-total'"), std::string::npos);
  const std::string img =
      "<img class=\"qc-picture\" src=\"e.png\" alt=\"quality-control picture of e\" loading=\"eager\">";
  EXPECT_NE(html.find(img), std::string::npos);
  EXPECT_NE(html.find("src=\"pictures/a%20b%231.png\""), std::string::npos);  // a path, as a URL
  // Self-contained: nothing fetched but the pictures.
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(QcFont, CoversPrintableAscii) {
  using namespace autoreg::qc::detail;
  auto lit_cells = [](char c) {
    int n = 0;
    for (int y = 0; y < kGlyphHeight; ++y)
      for (int x = 0; x < kGlyphWidth; ++x) n += glyph_lit(c, x, y);
    return n;
  };
  EXPECT_EQ(lit_cells(' '), 0);
  for (char c = '!'; c <= '~'; ++c) EXPECT_GT(lit_cells(c), 0) << "'" << c << "'";
  // Glyphs differ from each other (no copy-paste slip left two characters alike).
  for (char a = '!'; a <= '~'; ++a) {
    for (char b = static_cast<char>(a + 1); b <= '~'; ++b) {
      bool same = true;
      for (int y = 0; y < kGlyphHeight && same; ++y)
        for (int x = 0; x < kGlyphWidth && same; ++x) same = glyph_lit(a, x, y) == glyph_lit(b, x, y);
      EXPECT_FALSE(same) << "'" << a << "' and '" << b << "'";
    }
  }
  EXPECT_EQ(to_ascii("a \xe2\x86\x92 b"), "a -> b");
  EXPECT_EQ(to_ascii("caf\xc3\xa9\tx"), "caf? x");
}

}  // namespace
