// The report as one self-contained HTML page: the table, its notes and the learning curves (under
// a search, with its rungs and the points where it stopped or holds runs).
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "svg_chart.h"
#include "table.h"
#include "writers.h"

namespace attnlab::nmt::detail {

namespace {

// Whether every run of the row that is not done is held at a rung by the search.
bool held_by_search(const ReportRow& row) {
  return row.done < static_cast<int>(row.runs.size()) &&
         std::all_of(row.runs.begin(), row.runs.end(), [](const ReportRun& r) {
           const auto held = [](SearchStanding s) { return s == SearchStanding::stopped || s == SearchStanding::waiting; };
           return r.status == RowStatus::kDone || (r.search && held(r.search->standing));
         });
}

// The curve's point at the rung where the search stopped or holds the run: the dev evaluation at
// the rung's step, else the last one before it.
void mark_end(Series& s, const ReportRun& run) {
  if (!run.search || s.points.empty()) return;
  const SearchStanding st = run.search->standing;
  if (st != SearchStanding::stopped && st != SearchStanding::waiting) return;
  s.mark = st == SearchStanding::stopped ? EndMark::stopped : EndMark::waiting;
  s.mark_at = s.points.back();
  for (const CurvePoint& p : s.points)
    if (p.step <= run.search->rung_steps) s.mark_at = p;
}

}  // namespace

std::string render_html(const Report& report) {
  const Table t = build_table(report);
  const std::string title = report.name.empty() ? "suite" : report.name;
  std::string out = fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{0} - attnlab report</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #111; background: #fff; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ padding: 4px 8px; border-bottom: 1px solid #ddd; }}
th {{ border-bottom: 2px solid #333; text-align: left; background: #f4f4f4; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
td.pending {{ color: #b8860b; }} td.failed {{ color: #c00; font-weight: bold; }} td.held {{ color: #666; }}
tr.base td {{ background: #f0f6ff; }}
td.agrees {{ color: #176117; }} td.differs {{ color: #a31515; }} td.strong {{ font-weight: bold; }}
p.agreement {{ margin: 4px 0; }}
.notes {{ font-size: 12px; color: #333; }}
.charts {{ display: flex; flex-wrap: wrap; gap: 16px; }}
</style>
</head>
<body>
<h1>{0}</h1>
)",
                                html_escape(title));
  if (!report.source.empty()) out += fmt::format("<p>Suite file: <code>{}</code></p>\n", html_escape(report.source));
  for (const auto& line : agreement_lines(report))
    out.append("<p class=\"agreement\"><strong>").append(html_escape(line)).append("</strong></p>\n");
  out += "<table>\n<thead><tr>";
  for (const auto& c : t.columns) out.append("<th>").append(html_escape(c.header)).append("</th>");
  out += "</tr></thead>\n<tbody>\n";
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const ReportRow& row = report.rows[r];
    out += row.is_base ? "<tr class=\"base\">" : "<tr>";
    for (std::size_t i = 0; i < t.rows[r].size(); ++i) {
      const Cell& c = t.rows[r][i];
      std::string cls = c.numeric ? "num" : "";
      if (i == 2 && row.failed > 0) cls = "failed";
      else if (i == 2 && held_by_search(row)) cls = "held";
      else if (i == 2 && row.done == 0) cls = "pending";
      else if (c.text.starts_with("agrees") || c.text.starts_with("differs"))
        cls = std::string(c.text.starts_with("agrees") ? "agrees" : "differs") + (c.text.ends_with("*") ? " strong" : "");
      out += cls.empty() ? std::string("<td>") : fmt::format("<td class=\"{}\">", cls);
      out += html_escape(plain_cell(c)) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n<ul class=\"notes\">\n";
  for (const auto& n : notes(report)) out.append("<li>").append(html_escape(n)).append("</li>\n");
  out += "</ul>\n<h2>Learning curves</h2>\n<div class=\"charts\">\n";
  std::vector<Series> loss, ppl;
  for (std::size_t g = 0; g < report.rows.size(); ++g) {
    const ReportRow& row = report.rows[g];
    const std::string color = series_color(g);
    bool first_loss = true, first_ppl = true;
    for (const ReportRun& run : row.runs) {
      if (!run.train_loss.empty()) loss.push_back({row.name, color, run.train_loss, first_loss}), first_loss = false;
      if (run.dev_ppl.empty()) continue;
      ppl.push_back({row.name, color, run.dev_ppl, first_ppl}), first_ppl = false;
      mark_end(ppl.back(), run);
    }
  }
  std::vector<Guide> rungs;
  if (report.search)
    for (std::size_t k = 0; k < report.search->rungs.size(); ++k)
      rungs.push_back({report.search->rungs[k], fmt::format("rung {}", k)});
  out += svg_chart("Training loss (label-smoothed)", "train loss", loss, false, rungs);
  out += svg_chart("Dev perplexity (per wordpiece)", "dev PPL", ppl, true, rungs);
  out += "</div>\n<p class=\"notes\">Generated by attnlab report. One curve per seed; the colours follow the rows.";
  if (report.search)
    out += fmt::format(" Dashed lines: the search's rungs. On the dev perplexity curves a cross marks where the search "
                       "stopped a run (ranked out by {} at that rung), a ring where one waits at a rung.",
                       search_metric_name(report.search->metric));
  out += "</p>\n</body>\n</html>\n";
  return out;
}

}  // namespace attnlab::nmt::detail
