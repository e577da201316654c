// The report as aligned plain text for a terminal.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "table.h"
#include "writers.h"

namespace attnlab::nmt::detail {

namespace {

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace

std::string render_terminal(const Report& report) {
  const Table t = build_table(report);
  std::vector<std::size_t> width(t.columns.size());
  for (std::size_t i = 0; i < t.columns.size(); ++i) width[i] = display_width(t.columns[i].header);
  for (const auto& row : t.rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(plain_cell(row[i])));
  const auto pad = [&](const std::string& s, std::size_t i, bool right) {
    const std::string fill(width[i] - display_width(s), ' ');
    return right ? fill + s : s + fill;
  };
  std::string out = fmt::format("{}{}\n", report.name.empty() ? "suite" : report.name,
                                report.source.empty() ? "" : fmt::format(" ({})", report.source));
  const auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string l;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) l += "  ";
      l += pad(cells[i], i, t.columns[i].numeric && !header);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  std::vector<std::string> header;
  for (const auto& c : t.columns) header.push_back(c.header);
  out += line(header, true);
  std::size_t total = 0;
  for (std::size_t w : width) total += w;
  out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
  for (const auto& row : t.rows) {
    std::vector<std::string> cells;
    for (const auto& c : row) cells.push_back(plain_cell(c));
    out += line(cells, false);
  }
  out += "\n";
  for (const auto& n : notes(report)) out += n + "\n";
  return out;
}

}  // namespace attnlab::nmt::detail
