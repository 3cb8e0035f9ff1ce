#include "svg.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <sstream>

namespace autoreg::qc::svg {

std::string num(double value, int decimals) {
  if (!std::isfinite(value)) return "0";
  // to_chars ignores the C locale, so a host that sets a decimal comma cannot break the SVG.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, decimals);
  std::string s(buf, r.ptr);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string label(double value, int digits) {
  if (!std::isfinite(value)) return "—";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::general, digits);
  std::string s(buf, r.ptr);
  return s == "-0" ? "0" : s;
}

const char* colour(size_t i) {
  static constexpr std::array<const char*, 10> kPalette = {
      "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % kPalette.size()];
}

namespace {

// Layout of every chart, in pixels: room for y labels on the left, the title on top, x
// labels below and the legend on the right.
constexpr double kLeft = 46, kTop = 26, kBottom = 30, kRightBare = 12, kRightLegend = 128;

struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;  // in axis units (log10 of the value on a log axis)
  bool log = false;
};

// A 1-2-5 step giving about `count` intervals over `range`.
double nice_step(double range, int count) {
  const double raw = range / std::max(count, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

// Widens an empty or degenerate range so that mapping never divides by zero.
void widen(double& lo, double& hi, double pad) {
  if (!(hi - lo > 1e-12 * std::max({std::fabs(lo), std::fabs(hi), 1.0}))) {
    const double d = lo != 0 ? std::fabs(lo) * 0.1 : pad;
    lo -= d;
    hi += d;
  }
}

Axis linear_axis(double lo, double hi, int count, bool round_out, bool integer) {
  Axis a;
  widen(lo, hi, integer ? 1.0 : 0.5);
  if (!std::isfinite(hi - lo)) {  // values near ±DBL_MAX: nothing sensible to draw
    lo = -1;
    hi = 1;
  }
  double step = nice_step(hi - lo, count);
  if (integer) step = std::max(step, 1.0);
  if (round_out) {
    // A little room first, so that data on a round number does not run along the frame.
    const double pad = 0.02 * (hi - lo);
    lo = std::floor((lo - pad) / step) * step;
    hi = std::ceil((hi + pad) / step) * step;
  }
  a.lo = lo;
  a.hi = hi;
  const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
  for (double i = first; i <= last && a.ticks.size() < 50; ++i) a.ticks.push_back(i * step);
  return a;
}

// Whole decades around the data (already in log10 units).
Axis log_axis(double lo, double hi) {
  Axis a;
  a.log = true;
  a.lo = std::floor(lo);
  a.hi = std::max(std::ceil(hi), a.lo + 1);
  const double stride = std::max(1.0, std::ceil((a.hi - a.lo) / 6));
  for (double k = a.lo; k <= a.hi; k += stride) a.ticks.push_back(k);
  return a;
}

// The points of a series that can be drawn, thinned to at most `max_points` (first, every
// stride-th and the last).
std::vector<std::pair<double, double>> drawable(const Series& s, bool log_y, size_t max_points) {
  std::vector<std::pair<double, double>> p;
  for (const auto& [x, y] : s.points) {
    if (!std::isfinite(x) || !std::isfinite(y) || (log_y && y <= 0)) continue;
    p.emplace_back(x, log_y ? std::log10(y) : y);
  }
  if (max_points > 1 && p.size() > max_points) {
    const size_t stride = (p.size() + max_points - 1) / max_points;
    std::vector<std::pair<double, double>> thin;
    for (size_t i = 0; i < p.size(); i += stride) thin.push_back(p[i]);
    if (thin.back() != p.back()) thin.push_back(p.back());
    p = std::move(thin);
  }
  return p;
}

}  // namespace

std::string line_chart(const std::vector<Series>& series, const ChartOptions& o) {
  // A fixed range that reaches zero cannot be drawn on a log axis.
  const bool log_y = o.log_y && !(o.fixed_y && !(o.y_min > 0 && o.y_max > 0));
  std::vector<std::vector<std::pair<double, double>>> pts;
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const Series& s : series) {
    pts.push_back(drawable(s, log_y, o.max_points));
    for (const auto& [x, y] : pts.back()) {
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  const bool empty = !std::isfinite(x_lo);
  if (!empty && !o.fixed_y) {
    for (const HorizontalMark& h : o.horizontal) {
      if (!std::isfinite(h.y) || (log_y && h.y <= 0)) continue;
      const double y = log_y ? std::log10(h.y) : h.y;
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  if (empty) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;

  const Axis xa = linear_axis(x_lo, x_hi, o.x_ticks, false, o.integer_x);
  Axis ya;
  if (o.fixed_y) {
    ya = log_y ? log_axis(std::log10(o.y_min), std::log10(o.y_max))
                 : linear_axis(o.y_min, o.y_max, o.y_ticks, false, false);
  } else {
    ya = log_y ? log_axis(y_lo, y_hi) : linear_axis(y_lo, y_hi, o.y_ticks, !empty, false);
  }

  const double right = o.legend ? kRightLegend : kRightBare;
  const double pw = std::max(o.width - kLeft - right, 10.0), ph = std::max(o.height - kTop - kBottom, 10.0);
  auto px = [&](double x) { return kLeft + (x - xa.lo) / (xa.hi - xa.lo) * pw; };
  auto py = [&](double y) {
    return kTop + ph - (std::clamp(y, ya.lo, ya.hi) - ya.lo) / (ya.hi - ya.lo) * ph;
  };

  std::ostringstream s;
  s << "<svg class=\"" << escape(o.css_class) << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
    << num(o.width) << "\" height=\"" << num(o.height) << "\" viewBox=\"0 0 " << num(o.width) << ' '
    << num(o.height) << "\" role=\"img\" aria-label=\"" << escape(o.title) << "\">\n";
  s << "<text class=\"title\" x=\"" << num(kLeft) << "\" y=\"16\">" << escape(o.title);
  if (!o.note.empty()) s << "<tspan class=\"note\"> · " << escape(o.note) << "</tspan>";
  s << "</text>\n";

  // Grid and tick labels.
  s << "<g class=\"grid\">";
  for (double t : ya.ticks) {
    s << "<line x1=\"" << num(kLeft) << "\" x2=\"" << num(kLeft + pw) << "\" y1=\"" << num(py(t))
      << "\" y2=\"" << num(py(t)) << "\"/>";
  }
  s << "</g>\n<g class=\"ticks\">";
  for (double t : ya.ticks) {
    s << "<text x=\"" << num(kLeft - 4) << "\" y=\"" << num(py(t) + 3.5) << "\" text-anchor=\"end\">"
      << escape(label(ya.log ? std::pow(10.0, t) : t, 3)) << "</text>";
  }
  if (!empty) {
    for (double t : xa.ticks) {
      s << "<line x1=\"" << num(px(t)) << "\" x2=\"" << num(px(t)) << "\" y1=\"" << num(kTop + ph)
        << "\" y2=\"" << num(kTop + ph + 4) << "\"/><text x=\"" << num(px(t)) << "\" y=\""
        << num(kTop + ph + 15) << "\" text-anchor=\"middle\">" << escape(label(t, 6)) << "</text>";
    }
  }
  s << "</g>\n<rect class=\"frame\" x=\"" << num(kLeft) << "\" y=\"" << num(kTop) << "\" width=\""
    << num(pw) << "\" height=\"" << num(ph) << "\"/>\n";
  if (empty) {
    s << "<text class=\"empty\" x=\"" << num(kLeft + pw / 2) << "\" y=\"" << num(kTop + ph / 2)
      << "\" text-anchor=\"middle\">no data</text>\n";
  }

  // Marks go under the series so that a line on a phase boundary stays visible.
  for (const VerticalMark& v : o.vertical) {
    if (empty || !std::isfinite(v.x) || v.x < xa.lo || v.x > xa.hi) continue;
    s << "<line class=\"vmark\" x1=\"" << num(px(v.x)) << "\" x2=\"" << num(px(v.x)) << "\" y1=\""
      << num(kTop) << "\" y2=\"" << num(kTop + ph) << "\"><title>" << escape(v.label)
      << "</title></line>";
    if (o.legend) {  // small multiples have no room for the word
      s << "<text class=\"vmark-label\" x=\"" << num(px(v.x) + 3) << "\" y=\"" << num(kTop + 10) << "\">"
        << escape(v.label) << "</text>";
    }
    s << '\n';
  }
  for (const HorizontalMark& h : o.horizontal) {
    if (empty || !std::isfinite(h.y) || (log_y && h.y <= 0)) continue;
    const double y = py(log_y ? std::log10(h.y) : h.y);
    s << "<line class=\"hmark\" x1=\"" << num(kLeft) << "\" x2=\"" << num(kLeft + pw) << "\" y1=\""
      << num(y) << "\" y2=\"" << num(y) << "\" stroke=\"" << escape(h.colour) << "\"/><text class=\"hmark-label\" x=\""
      << num(kLeft + pw - 3) << "\" y=\"" << num(y - 3) << "\" text-anchor=\"end\" fill=\"" << escape(h.colour)
      << "\">" << escape(h.label) << "</text>\n";
  }

  s << "<g class=\"series\"" << (o.muted ? " opacity=\"0.35\"" : "") << ">\n";
  for (size_t i = 0; i < series.size(); ++i) {
    if (pts[i].empty()) continue;
    const std::string c = escape(series[i].colour);
    s << "<polyline stroke=\"" << c << "\" points=\"";
    for (size_t k = 0; k < pts[i].size(); ++k) {
      s << (k ? " " : "") << num(px(pts[i][k].first)) << ',' << num(py(pts[i][k].second));
    }
    s << "\"><title>" << escape(series[i].name) << "</title></polyline>\n";
    // A single point draws no line, so it gets a dot whatever the options say.
    if (series[i].markers || pts[i].size() == 1) {
      for (const auto& [x, y] : pts[i]) {
        s << "<circle r=\"2.5\" fill=\"" << c << "\" cx=\"" << num(px(x)) << "\" cy=\"" << num(py(y)) << "\"/>";
      }
      s << '\n';
    }
  }
  s << "</g>\n";

  if (o.legend) {
    const double lx = kLeft + pw + 12;
    for (size_t i = 0; i < series.size(); ++i) {
      const double ly = kTop + 4 + 16.0 * static_cast<double>(i);
      s << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" width=\"10\" height=\"10\" fill=\""
        << escape(series[i].colour) << "\"/><text x=\"" << num(lx + 14) << "\" y=\"" << num(ly + 9)
        << "\">" << escape(series[i].name) << "</text>\n";
    }
  }
  s << "</svg>\n";
  return s.str();
}

const char* const kChartStyle = R"(
svg text { font: 11px sans-serif; }
svg .title { font-size: 12px; font-weight: 600; }
svg .note { font-weight: normal; fill: #888; }
svg .grid line { stroke: #eee; }
svg .ticks line, svg .frame { stroke: #999; fill: none; }
svg .ticks text, svg .empty, svg .vmark-label { fill: #666; }
svg polyline { fill: none; stroke-width: 1.5; stroke-linejoin: round; }
svg .vmark { stroke: #555; stroke-dasharray: 2 3; }
svg .hmark { stroke-dasharray: 6 4; stroke-width: 1.5; }
)";

}  // namespace autoreg::qc::svg
