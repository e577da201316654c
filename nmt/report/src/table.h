#pragma once
// Internal to the report: the table every format renders (one row per suite row, the columns the
// report has data for), the notes under it, and the number formats they share.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/nmt/report/report.h"

namespace attnlab::nmt::detail {

// What a cell means, so that each format can render the "±" and "Δ" its own way.
struct Cell {
  std::string text;      // plain text
  std::string mean, sd;  // when set instead, the cell is "mean ± sd"
  bool numeric = false;
};

struct Column {
  std::string header;        // plain
  std::string latex_header;  // LaTeX
  bool numeric = false;
};

struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
};

std::string fixed(double v, int digits);
std::string signed_fixed(double v, int digits);  // "+0.00" rather than "-0.00"
std::string millions(double parameters);
std::string duration(double seconds);  // "12.3s", "4m05s", "1h02m"

Cell text_cell(std::string s);
Cell num_cell(std::string s);
Cell stat_cell(const Summary& s, int digits);
std::string plain_cell(const Cell& c);  // "mean ± sd" or the text

// An absolute path as seen from the working folder (reports stay free of the machine's layout).
std::string display_path(const std::string& path);
std::string settings_text(const std::vector<std::pair<std::string, std::string>>& settings);
bool any_paper(const Report& r);
bool any_test(const Report& r);
bool any_bootstrap(const Report& r);

Table build_table(const Report& report);
// "dev PPL: direction agrees on k of n rows (m significant)" and the same for BLEU; none without
// the paper's values.
std::vector<std::string> agreement_lines(const Report& report);
std::string noise_text(const std::optional<double>& noise, int digits);
// The notes printed under the table (plain text; each format escapes them).
std::vector<std::string> notes(const Report& report);
// Under a search (search_notes.cpp): its summary, what a standing in the status column means, and
// the runs finished with --no-prune; none without one.
std::vector<std::string> search_notes(const Report& report);

}  // namespace attnlab::nmt::detail
