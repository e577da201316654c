// The report as a Markdown table with its notes.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "table.h"
#include "writers.h"

namespace attnlab::nmt::detail {

namespace {

std::string md_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

}  // namespace

std::string render_markdown(const Report& report) {
  const Table t = build_table(report);
  std::string out = fmt::format("## {}\n\n", md_escape(report.name.empty() ? "suite" : report.name));
  if (!report.source.empty()) out += fmt::format("Suite file: `{}`\n\n", report.source);
  out += "|";
  for (const auto& c : t.columns) out.append(" ").append(md_escape(c.header)).append(" |");
  out += "\n|";
  for (const auto& c : t.columns) out += c.numeric ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& c : row) out.append(" ").append(md_escape(plain_cell(c))).append(" |");
    out += "\n";
  }
  out += "\n";
  for (const auto& n : notes(report)) out.append("- ").append(md_escape(n)).append("\n");
  return out;
}

}  // namespace attnlab::nmt::detail
