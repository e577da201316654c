#include "svg_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

namespace attnlab::nmt::detail {

std::string html_escape(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

namespace {
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
// A cross (stopped) or a ring (waiting) centred at (x, y); `row` names the run's row ("" in the legend).
std::string end_mark(EndMark kind, double x, double y, const std::string& color, const std::string& row) {
  const char* cls = kind == EndMark::stopped ? "stop" : "wait";
  const std::string data =
      row.empty() ? std::string() : fmt::format(" class=\"{}\" data-row=\"{}\"", cls, html_escape(row));
  if (kind == EndMark::stopped)
    return fmt::format("<path{} d=\"M{:.1f},{:.1f} l10,10 m0,-10 l-10,10\" stroke=\"{}\" "
                       "stroke-width=\"2.5\" fill=\"none\"/>\n",
                       data, x - 5, y - 5, color);
  return fmt::format("<circle{} cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" stroke=\"{}\" stroke-width=\"2\" "
                     "fill=\"none\"/>\n",
                     data, x, y, color);
}

}  // namespace

std::string series_color(std::size_t i) { return kPalette[i % std::size(kPalette)]; }

// Tick values for [lo, hi]: "nice" linear steps (1, 2, 5 x 10^k).
std::vector<double> linear_ticks(double lo, double hi, int target) {
  const double range = std::max(hi - lo, 1e-12);
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
    }
  return ticks;
}

std::string tick_label(double v) {
  if (v != 0.0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-3)) return fmt::format("{:.0e}", v);
  std::string s = fmt::format("{:.3f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}


std::string svg_chart(const std::string& title, const std::string& y_label, const std::vector<Series>& series,
                      bool markers, const std::vector<Guide>& guides) {
  constexpr double W = 660, H = 400, left = 70, right = 170, top = 36, bottom = 52;
  const double pw = W - left - right, ph = H - top - bottom;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "class=\"chart\" role=\"img\" aria-label=\"{2}\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{3}\" y=\"22\" font-size=\"15\" font-weight=\"bold\" text-anchor=\"middle\">{2}</text>\n",
      W, H, html_escape(title), left + pw / 2);
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  bool any = false;
  for (const auto& s : series)
    for (const auto& p : s.points) {
      if (!std::isfinite(p.value)) continue;
      if (!any) x_lo = x_hi = static_cast<double>(p.step), y_lo = y_hi = p.value, any = true;
      x_lo = std::min(x_lo, static_cast<double>(p.step));
      x_hi = std::max(x_hi, static_cast<double>(p.step));
      y_lo = std::min(y_lo, p.value);
      y_hi = std::max(y_hi, p.value);
    }
  if (!any) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\" fill=\"#666\">no data yet</text>\n</svg>\n",
                       left + pw / 2, top + ph / 2);
    return out;
  }
  x_lo = std::min(x_lo, 0.0);
  for (const Guide& g : guides) x_hi = std::max(x_hi, static_cast<double>(g.step));
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  const bool log_y = y_lo > 0 && y_hi / y_lo > 10;
  if (log_y) {
    y_lo = std::pow(10.0, std::floor(std::log10(y_lo) * 10) / 10), y_hi = std::pow(10.0, std::ceil(std::log10(y_hi) * 10) / 10);
  } else {
    const double pad = std::max((y_hi - y_lo) * 0.05, std::abs(y_hi) * 0.01 + 1e-9);
    y_lo -= pad, y_hi += pad;
  }
  const auto fy = [&](double v) {
    const double t = log_y ? (std::log10(v) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo))
                           : (v - y_lo) / (y_hi - y_lo);
    return top + ph * (1 - t);
  };
  const auto fx = [&](double s) { return left + pw * (s - x_lo) / (x_hi - x_lo); };
  // Grid, ticks and labels.
  out += "<g font-size=\"11\" fill=\"#333\">\n";
  for (const double v : linear_ticks(x_lo, x_hi)) {
    const double x = fx(v);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e5e5e5\"/>"
                       "<line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{0:.1f}\" y2=\"{3:.1f}\" stroke=\"#333\"/>"
                       "<text x=\"{0:.1f}\" y=\"{4:.1f}\" text-anchor=\"middle\">{5}</text>\n",
                       x, top, top + ph, top + ph + 5, top + ph + 18, tick_label(v));
  }
  for (const double v : log_y ? log_ticks(y_lo, y_hi) : linear_ticks(y_lo, y_hi)) {
    const double y = fy(v);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e5e5e5\"/>"
                       "<line x1=\"{3:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>"
                       "<text x=\"{4:.1f}\" y=\"{5:.1f}\" text-anchor=\"end\">{6}</text>\n",
                       left, y, left + pw, left - 5, left - 8, y + 4, tick_label(v));
  }
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", left, top, pw, ph);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">step</text>\n", left + pw / 2, H - 12);
  out += fmt::format("<text x=\"16\" y=\"{0}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}{2}</text>\n",
                     top + ph / 2, html_escape(y_label), log_y ? " (log scale)" : "");
  out += "</g>\n";
  // Guides.
  for (const Guide& g : guides) {
    const double x = fx(static_cast<double>(g.step));
    out += fmt::format("<line class=\"guide\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#888\" "
                       "stroke-dasharray=\"4 3\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"10\" fill=\"#666\" "
                       "text-anchor=\"middle\">{4}</text>\n",
                       x, top, top + ph, top - 3, html_escape(g.label));
  }
  // Curves.
  for (const auto& s : series) {
    std::string pts;
    for (const auto& p : s.points) {
      if (!std::isfinite(p.value) || (log_y && p.value <= 0)) continue;
      pts += fmt::format("{}{:.1f},{:.1f}", pts.empty() ? "" : " ", fx(static_cast<double>(p.step)), fy(p.value));
    }
    if (pts.empty()) continue;
    out += fmt::format("<polyline class=\"curve\" data-row=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
                       "stroke-linejoin=\"round\" points=\"{}\"/>\n",
                       html_escape(s.label), s.color, pts);
    if (markers || s.points.size() == 1)
      for (const auto& p : s.points)
        if (std::isfinite(p.value) && (!log_y || p.value > 0))
          out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", fx(static_cast<double>(p.step)),
                             fy(p.value), s.color);
    if (s.mark != EndMark::none && std::isfinite(s.mark_at.value) && (!log_y || s.mark_at.value > 0))
      out += end_mark(s.mark, fx(static_cast<double>(s.mark_at.step)), fy(s.mark_at.value), s.color, s.label);
  }
  // Legend: one entry per row.
  double ly = top + 8;
  out += "<g font-size=\"12\">\n";
  for (const auto& s : series) {
    if (!s.first_of_group) continue;
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/>"
                       "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
                       left + pw + 14, ly, left + pw + 38, s.color, left + pw + 44, ly + 4, html_escape(s.label));
    ly += 18;
  }
  // One entry per kind of mark and for the guides, when the chart has them.
  for (const EndMark kind : {EndMark::stopped, EndMark::waiting})
    if (std::any_of(series.begin(), series.end(), [&](const Series& s) { return s.mark == kind; })) {
      out += end_mark(kind, left + pw + 26, ly, "#333", "") +
             fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", left + pw + 44, ly + 4,
                         kind == EndMark::stopped ? "stopped by search" : "waiting at a rung");
      ly += 18;
    }
  if (!guides.empty())
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>"
                       "<text x=\"{3}\" y=\"{4}\">search rungs</text>\n",
                       left + pw + 14, ly, left + pw + 38, left + pw + 44, ly + 4);
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace attnlab::nmt::detail
