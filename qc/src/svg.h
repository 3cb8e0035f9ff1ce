// Internal to the search's report (report.cpp): the few SVG pieces it draws with, so that
// every plot goes through one line-chart routine and the page needs no plotting library.
// Coordinates are written with one decimal and nothing non-finite ever reaches the
// output: points with a NaN or infinite coordinate are dropped, zero ranges are widened.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autoreg/base/html.h"

namespace autoreg::qc::svg {

// Text made safe for HTML and SVG content and attribute values (& < > " ').
inline std::string escape(const std::string& text) { return base::escape_html(text); }

// A coordinate: fixed, `decimals` places, trailing zeros dropped; "0" for a non-finite value.
std::string num(double value, int decimals = 1);

// A value for a label or a table: at most `digits` significant digits, "—" when non-finite.
std::string label(double value, int digits = 4);

// Colour `i` of a categorical palette (Tableau 10), cycling.
const char* colour(size_t i);

struct Series {
  std::string name;
  std::string colour;
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite ones are skipped
  bool markers = false;                           // a dot on every point as well as the line
};

// A vertical marker (phase change) at x.
struct VerticalMark {
  double x;
  std::string label;
};

// A horizontal reference line (a budget) at y, drawn dashed.
struct HorizontalMark {
  double y;
  std::string label;
  std::string colour = "#c0392b";
};

struct ChartOptions {
  std::string title;
  std::string css_class = "chart";  // the <svg> element's class attribute
  double width = 520, height = 260;
  bool fixed_y = false;  // use [y_min, y_max] instead of the data's range
  double y_min = 0, y_max = 1;
  bool log_y = false;     // log10 axis; values ≤ 0 are skipped
  bool integer_x = true;  // x ticks on whole numbers (steps)
  int x_ticks = 6, y_ticks = 5;  // about how many tick labels
  bool legend = true;     // the series' names to the right of the plot
  bool muted = false;     // draw the series faded (an edge that is not searched)
  std::string note;       // a short word after the title ("fixed")
  size_t max_points = 600;  // longer series are thinned to keep the page small
  std::vector<VerticalMark> vertical;
  std::vector<HorizontalMark> horizontal;
};

// A complete <svg> element: axes, ticks, grid, one <polyline> per series that has at
// least one finite point, the marks, the title and (optionally) a legend. With no data
// it draws empty axes and says so.
std::string line_chart(const std::vector<Series>& series, const ChartOptions& options);

// The CSS the charts need in their page (fonts that fit the margins, unfilled frames):
// without it a browser fills each chart's frame black.
extern const char* const kChartStyle;

}  // namespace autoreg::qc::svg
