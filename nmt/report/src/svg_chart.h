#pragma once
// Internal to the report: line charts as inline SVG (no script, no external file), for the HTML page.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/nmt/report/report.h"

namespace attnlab::nmt::detail {

std::string html_escape(std::string_view s);  // & < > " as entities
std::string series_color(std::size_t i);      // a colour of a ten-colour palette, cycling

// Axis ticks for [lo, hi]: "nice" linear steps (1, 2, 5 x 10^k), or 1, 2, 5 per decade.
std::vector<double> linear_ticks(double lo, double hi, int target = 6);
std::vector<double> log_ticks(double lo, double hi);
std::string tick_label(double v);

// Where a curve ends early, marked at one of its points: a cross where a search stopped the run,
// a ring where it waits at a rung.
enum class EndMark { none, stopped, waiting };

struct Series {
  std::string label;
  std::string color;
  std::vector<CurvePoint> points;
  bool first_of_group = true;
  EndMark mark = EndMark::none;
  CurvePoint mark_at{};
};

// A dashed vertical line across the plot at a step (a search's rung), labelled at its top.
struct Guide {
  std::int64_t step = 0;
  std::string label;
};

// One chart: every series a polyline (with point markers when `markers`, and its end mark), the
// guides (the x axis reaches the last), a legend entry for the first series of each group and one
// per kind of mark and guide drawn, the y axis logarithmic when the values span more than a decade.
std::string svg_chart(const std::string& title, const std::string& y_label, const std::vector<Series>& series,
                      bool markers, const std::vector<Guide>& guides = {});

}  // namespace attnlab::nmt::detail
