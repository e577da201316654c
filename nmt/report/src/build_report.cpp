#include "attnlab/nmt/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <fmt/core.h>
#include <toml++/toml.h>

#include <nlohmann/json.hpp>

#include "attnlab/error.h"
#include "report_sources.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ATTNLAB_CHECK(in.good(), "cannot open '{}'", path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// ---- number formatting ----

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }
std::string signed_fixed(double v, int digits) {
  const std::string s = fmt::format("{:+.{}f}", v, digits);
  return (s == fmt::format("-{:.{}f}", 0.0, digits)) ? fmt::format("+{:.{}f}", 0.0, digits) : s;
}
std::string millions(double parameters) {
  const double m = parameters / 1e6;
  return fixed(m, m >= 10.0 ? 1 : 2);
}
std::string duration(double seconds) {
  if (seconds < 60.0) return fmt::format("{:.1f}s", seconds);
  const auto total = static_cast<std::int64_t>(std::llround(seconds));
  if (total < 3600) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
}

// What a cell means, so that each format can render the "±" and "Δ" its own way.
struct Cell {
  std::string text;      // plain text
  std::string mean, sd;  // when set instead, the cell is "mean ± sd"
  bool numeric = false;
};

Cell text_cell(std::string s) { return Cell{std::move(s), "", "", false}; }
Cell num_cell(std::string s) { return Cell{std::move(s), "", "", true}; }
Cell stat_cell(const Summary& s, int digits) {
  if (s.n == 0) return num_cell("");
  if (s.n == 1) return num_cell(fixed(s.mean, digits));
  return Cell{"", fixed(s.mean, digits), fixed(s.std, digits), true};
}

struct Column {
  std::string header;        // plain
  std::string latex_header;  // LaTeX
  bool numeric = false;
};

struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
};

std::string settings_text(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string out;
  for (const auto& [k, v] : settings) {
    if (!out.empty()) out += ", ";
    out += k + "=" + v;
  }
  return out;
}

bool any_paper(const Report& r) {
  return std::any_of(r.rows.begin(), r.rows.end(), [](const ReportRow& row) { return row.paper.has_value(); });
}
bool any_test(const Report& r) {
  return std::any_of(r.rows.begin(), r.rows.end(), [](const ReportRow& row) { return row.test_bleu.n > 0; });
}
bool any_bootstrap(const Report& r) {
  return std::any_of(r.rows.begin(), r.rows.end(), [](const ReportRow& row) { return row.bootstrap.has_value(); });
}

Table build_table(const Report& report) {
  Table t;
  const bool paper = any_paper(report), boot = any_bootstrap(report);
  t.columns = {{"row", "row", false},
               {"settings", "settings", false},
               {"status", "status", false},
               {"seeds", "seeds", true},
               {"params (M)", "params (M)", true},
               {"steps", "steps", true},
               {"train time", "train time", true},
               {"tok/s", "tok/s", true},
               {"dev PPL", "dev PPL", true},
               {"ΔPPL", "$\\Delta$PPL", true},
               {"BLEU", "BLEU", true},
               {"ΔBLEU", "$\\Delta$BLEU", true}};
  const bool test = any_test(report);
  if (test) {
    t.columns.push_back({"test PPL", "test PPL", true});
    t.columns.push_back({"test BLEU", "test BLEU", true});
  }
  if (boot) t.columns.push_back({"p", "$p$", true});
  if (paper) {
    t.columns.push_back({"paper PPL", "paper PPL", true});
    t.columns.push_back({"paper BLEU", "paper BLEU", true});
    t.columns.push_back({"paper params (M)", "paper params (M)", true});
    t.columns.push_back({"paper ΔPPL", "paper $\\Delta$PPL", true});
    t.columns.push_back({"paper ΔBLEU", "paper $\\Delta$BLEU", true});
    t.columns.push_back({"PPL vs paper", "PPL vs paper", false});
    t.columns.push_back({"BLEU vs paper", "BLEU vs paper", false});
  }
  for (const ReportRow& row : report.rows) {
    std::vector<Cell> c;
    c.push_back(text_cell(row.name));
    c.push_back(text_cell(row.is_base && row.settings.empty() ? "(base)" : settings_text(row.settings)));
    c.push_back(text_cell(row.status_text()));
    c.push_back(num_cell(std::to_string(row.runs.size())));
    const bool has = row.done > 0;
    c.push_back(num_cell(has ? millions(row.params.mean) : ""));
    c.push_back(num_cell(has ? fixed(row.steps.mean, 0) : ""));
    c.push_back(num_cell(has ? duration(row.train_seconds.mean) : ""));
    c.push_back(num_cell(has ? fixed(row.tokens_per_second.mean, 0) : ""));
    c.push_back(stat_cell(row.dev_ppl, 2));
    c.push_back(num_cell(row.is_base && has ? "base" : row.delta_ppl ? signed_fixed(*row.delta_ppl, 2) : ""));
    c.push_back(stat_cell(row.bleu, 2));
    c.push_back(num_cell(row.is_base && has ? "base" : row.delta_bleu ? signed_fixed(*row.delta_bleu, 2) : ""));
    if (test) {
      c.push_back(stat_cell(row.test_ppl, 2));
      c.push_back(stat_cell(row.test_bleu, 2));
    }
    if (boot) c.push_back(num_cell(row.bootstrap ? fixed(row.bootstrap->p_value, 3) : ""));
    if (paper) {
      const auto opt = [](const std::optional<double>& v, int digits) { return v ? fixed(*v, digits) : std::string(); };
      c.push_back(num_cell(row.paper ? opt(row.paper->ppl, 2) : ""));
      c.push_back(num_cell(row.paper ? opt(row.paper->bleu, 1) : ""));
      c.push_back(num_cell(row.paper ? opt(row.paper->params_m, 0) : ""));
      const auto delta = [](const std::optional<double>& v, int digits) { return v ? signed_fixed(*v, digits) : std::string(); };
      c.push_back(num_cell(row.is_base ? "" : delta(row.ppl_effect.paper_delta, 2)));
      c.push_back(num_cell(row.is_base ? "" : delta(row.bleu_effect.paper_delta, 1)));
      c.push_back(text_cell(row.ppl_effect.verdict()));
      c.push_back(text_cell(row.bleu_effect.verdict()));
    }
    t.rows.push_back(std::move(c));
  }
  return t;
}

// The notes printed under the table (plain text; each format escapes them).
// The answer to "do our effects point the paper's way?", one line per metric ("" without paper values).
std::vector<std::string> agreement_lines(const Report& report) {
  if (!any_paper(report)) return {};
  return {report.ppl_agreement.summary("dev PPL"), report.bleu_agreement.summary("BLEU")};
}

std::string noise_text(const std::optional<double>& noise, int digits) {
  return noise ? fmt::format("{:.{}f}", *noise, digits) : std::string("unknown (one base seed)");
}

std::vector<std::string> notes(const Report& report) {
  std::vector<std::string> out = agreement_lines(report);
  for (const auto& k : report.bleu_kinds) {
    std::string line = fmt::format("BLEU: {} mode, signature {}", k.mode.empty() ? "unknown" : k.mode,
                                   k.signature.empty() ? "(none recorded)" : k.signature);
    if (report.bleu_kinds.size() > 1) {
      line += " (rows:";
      for (const auto& r : k.rows) line.append(" ").append(r);
      line += ")";
    }
    out.push_back(line);
  }
  if (report.bleu_kinds.empty()) out.push_back("BLEU: no finished row yet");
  out.push_back("dev PPL: perplexity per wordpiece on the dev set, without label smoothing.");
  for (const ReportRow& row : report.rows)
    for (const ReportRun& run : row.runs)
      if (auto it = run.evals.find("test"); it != run.evals.end()) {
        const EvalRecord& e = it->second;
        out.push_back(fmt::format(
            "test ({} seed {}): {}, BLEU {:.2f} ({} mode, signature {}; sacreBLEU 13a {:.2f}), beam {}, alpha {}, "
            "checkpoint {} (step {}{}), recorded by attnlab eval --test",
            row.name, run.seed, e.reference, e.bleu, e.bleu_mode, e.bleu_signature, e.sacrebleu, e.beam, e.alpha,
            fs::path(e.checkpoint).filename().string(), e.step,
            e.averaged > 1 ? fmt::format(", the average of the last {} checkpoints", e.averaged) : ""));
      }
  out.push_back(fmt::format(
      "ΔPPL, ΔBLEU: the row's mean minus the base row's ({}). Several seeds: mean ± sample standard deviation.",
      report.base_row));
  if (any_bootstrap(report))
    out.push_back(fmt::format(
        "p: paired bootstrap resampling of the dev sentences against the base row (Koehn 2004; {} samples, seed {}, "
        "each row's seeds pooled per sentence): the share of samples where the row's BLEU does not exceed the "
        "base's (identical systems: p = 1).",
        report.bootstrap_samples, report.bootstrap_seed));
  if (any_paper(report)) {
    out.push_back(fmt::format("paper: {}", report.reference.empty() ? "the reference values of the suite" : report.reference));
    out.push_back(fmt::format(
        "paper ΔPPL, ΔBLEU: the paper's row minus the paper's base row. PPL / BLEU vs paper: whether our change has the "
        "same sign (agrees) or not (differs); none where the paper's change is zero or a number is missing. *: ours is "
        "outside the noise: |ΔPPL| above twice the base row's seed standard deviation ({}); for BLEU the paired "
        "bootstrap significant at 5 % two-sided and |ΔBLEU| above twice the base's seed standard deviation ({}).",
        noise_text(report.ppl_noise, 3), noise_text(report.bleu_noise, 2)));
  }
  for (const ReportRow& row : report.rows) {
    for (const ReportRun& run : row.runs)
      if (run.status == RowStatus::kFailed)
        out.push_back(fmt::format("{} (seed {}) failed: {}", row.name, run.seed, run.error.empty() ? "no error recorded" : run.error));
    if (!row.bootstrap_note.empty() && !row.is_base && row.done > 0)
      out.push_back(fmt::format("{}: no bootstrap test: {}", row.name, row.bootstrap_note));
  }
  for (const auto& w : report.warnings) out.push_back(fmt::format("warning: {}", w));
  return out;
}

// ---- terminal ----

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  return n;
}

std::string plain_cell(const Cell& c) { return c.mean.empty() ? c.text : c.mean + " ± " + c.sd; }

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

// ---- Markdown ----

std::string md_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

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

// ---- CSV ----

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string render_csv(const Report& report) {
  std::string out =
      "row,status,seeds,seeds_done,settings,params_m,steps,train_seconds,tokens_per_second,dev_ppl,dev_ppl_std,"
      "delta_ppl,bleu,bleu_std,delta_bleu,bootstrap_p,paper_ppl,paper_bleu,paper_params_m,paper_delta_ppl,"
      "paper_delta_bleu,ppl_direction,ppl_outside_noise,bleu_direction,bleu_outside_noise,bootstrap_p_worse,bleu_mode,"
      "bleu_signature,error";
  const bool test = any_test(report);
  out += test ? ",test_ppl,test_bleu\n" : "\n";
  const auto opt = [](const std::optional<double>& v, int digits) { return v ? fixed(*v, digits) : std::string(); };
  const auto direction = [](const EffectCheck& e) -> std::string { return e.agrees ? (*e.agrees ? "agrees" : "differs") : ""; };
  for (const ReportRow& row : report.rows) {
    const bool has = row.done > 0;
    std::string mode, signature, error;
    for (const ReportRun& run : row.runs) {
      if (run.result && mode.empty()) mode = run.result->bleu_mode, signature = run.result->bleu_signature;
      if (run.status == RowStatus::kFailed && error.empty()) error = run.error;
    }
    std::vector<std::string> f{
        row.name,
        row.status_text(),
        std::to_string(row.runs.size()),
        std::to_string(row.done),
        settings_text(row.settings),
        has ? fixed(row.params.mean / 1e6, 3) : "",
        has ? fixed(row.steps.mean, 0) : "",
        has ? fixed(row.train_seconds.mean, 1) : "",
        has ? fixed(row.tokens_per_second.mean, 1) : "",
        has ? fixed(row.dev_ppl.mean, 4) : "",
        has ? fixed(row.dev_ppl.std, 4) : "",
        opt(row.delta_ppl, 4),
        has ? fixed(row.bleu.mean, 4) : "",
        has ? fixed(row.bleu.std, 4) : "",
        opt(row.delta_bleu, 4),
        row.bootstrap ? fixed(row.bootstrap->p_value, 4) : "",
        row.paper ? opt(row.paper->ppl, 2) : "",
        row.paper ? opt(row.paper->bleu, 2) : "",
        row.paper ? opt(row.paper->params_m, 1) : "",
        opt(row.ppl_effect.paper_delta, 2),
        opt(row.bleu_effect.paper_delta, 2),
        direction(row.ppl_effect),
        row.ppl_effect.agrees ? (row.ppl_effect.outside_noise ? "yes" : "no") : "",
        direction(row.bleu_effect),
        row.bleu_effect.agrees ? (row.bleu_effect.outside_noise ? "yes" : "no") : "",
        row.bootstrap ? fixed(row.bootstrap->p_worse, 4) : "",
        mode,
        signature,
        error};
    if (test) {
      f.push_back(row.test_ppl.n ? fixed(row.test_ppl.mean, 4) : "");
      f.push_back(row.test_bleu.n ? fixed(row.test_bleu.mean, 4) : "");
    }
    for (std::size_t i = 0; i < f.size(); ++i) out.append(i ? "," : "").append(csv_field(f[i]));
    out += "\n";
  }
  return out;
}

// ---- LaTeX ----

std::string latex_escape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    switch (ch) {
      case '\\': out += "\\textbackslash{}"; break;
      case '&': case '%': case '$': case '#': case '_': case '{': case '}': out += '\\'; out += ch; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '|': out += "\\textbar{}"; break;
      default:
        if (s.compare(i, 2, "±") == 0) out += "$\\pm$", ++i;
        else if (s.compare(i, 2, "Δ") == 0) out += "$\\Delta$", ++i;
        else out += ch;
    }
  }
  return out;
}

std::string latex_cell(const Cell& c) {
  if (!c.mean.empty()) return c.mean + " $\\pm$ " + c.sd;
  if (c.text.empty()) return "--";
  return latex_escape(c.text);
}

std::string render_latex(const Report& report) {
  const Table t = build_table(report);
  std::string spec;
  for (const auto& c : t.columns) spec += c.numeric ? 'r' : 'l';
  std::string out = fmt::format("% {} -- generated by attnlab report; needs \\usepackage{{booktabs}}\n",
                                report.name.empty() ? "suite" : report.name);
  out.append("\\begin{tabular}{").append(spec).append("}\n\\toprule\n");
  for (std::size_t i = 0; i < t.columns.size(); ++i) out.append(i ? " & " : "").append(t.columns[i].latex_header);
  out += " \\\\\n\\midrule\n";
  for (const auto& row : t.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) out.append(i ? " & " : "").append(latex_cell(row[i]));
    out += " \\\\\n";
  }
  out += "\\bottomrule\n\\end{tabular}\n\n\\smallskip\n{\\footnotesize\n";
  for (const auto& n : notes(report)) out += latex_escape(n) + "\\\\\n";
  out += "}\n";
  return out;
}

// ---- HTML and SVG ----

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

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Tick values for [lo, hi]: "nice" linear steps (1, 2, 5 x 10^k).
std::vector<double> linear_ticks(double lo, double hi, int target = 6) {
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

struct Series {
  std::string label;
  std::string color;
  std::vector<CurvePoint> points;
  bool first_of_group = true;
};

std::string svg_chart(const std::string& title, const std::string& y_label, const std::vector<Series>& series,
                      bool markers) {
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
  out += "</g>\n</svg>\n";
  return out;
}

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
td.pending {{ color: #b8860b; }} td.failed {{ color: #c00; font-weight: bold; }}
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
    const std::string color = kPalette[g % std::size(kPalette)];
    bool first_loss = true, first_ppl = true;
    for (const ReportRun& run : row.runs) {
      if (!run.train_loss.empty()) loss.push_back({row.name, color, run.train_loss, first_loss}), first_loss = false;
      if (!run.dev_ppl.empty()) ppl.push_back({row.name, color, run.dev_ppl, first_ppl}), first_ppl = false;
    }
  }
  out += svg_chart("Training loss (label-smoothed)", "train loss", loss, false);
  out += svg_chart("Dev perplexity (per wordpiece)", "dev PPL", ppl, true);
  out += "</div>\n<p class=\"notes\">Generated by attnlab report. One curve per seed; the colours follow the rows.</p>\n"
         "</body>\n</html>\n";
  return out;
}

}  // namespace

// ---- public ----

ReportFormat parse_report_format(std::string_view name) {
  if (name == "terminal" || name == "text") return ReportFormat::kTerminal;
  if (name == "markdown" || name == "md") return ReportFormat::kMarkdown;
  if (name == "csv") return ReportFormat::kCsv;
  if (name == "latex" || name == "tex") return ReportFormat::kLatex;
  if (name == "html") return ReportFormat::kHtml;
  throw Error(fmt::format("unknown report format '{}' (terminal, markdown, csv, latex, html)", name));
}

BootstrapResult paired_bootstrap(const std::vector<BleuStats>& base, const std::vector<BleuStats>& system,
                                 const BleuConfig& config, int samples, std::uint64_t seed) {
  ATTNLAB_CHECK(base.size() == system.size(), "paired bootstrap: the base has {} sentences, the system {}",
                base.size(), system.size());
  ATTNLAB_CHECK(!base.empty(), "paired bootstrap: no sentences");
  ATTNLAB_CHECK(samples > 0, "paired bootstrap: samples must be positive");
  const auto sum = [](const std::vector<BleuStats>& v, const std::vector<std::size_t>* idx) {
    BleuStats total;
    if (idx)
      for (const std::size_t i : *idx) total += v[i];
    else
      for (const auto& s : v) total += s;
    return total;
  };
  BootstrapResult r;
  r.samples = samples;
  r.base_bleu = compute_bleu(sum(base, nullptr), config).score;
  r.system_bleu = compute_bleu(sum(system, nullptr), config).score;
  std::mt19937_64 rng(seed);
  const std::size_t n = base.size();
  std::vector<std::size_t> idx(n);
  int not_better = 0, not_worse = 0;
  for (int s = 0; s < samples; ++s) {
    for (auto& i : idx) i = static_cast<std::size_t>(rng() % n);
    const double b = compute_bleu(sum(base, &idx), config).score;
    const double y = compute_bleu(sum(system, &idx), config).score;
    if (!(y > b)) ++not_better;
    if (!(y < b)) ++not_worse;
  }
  r.p_value = static_cast<double>(not_better) / samples;
  r.p_worse = static_cast<double>(not_worse) / samples;
  return r;
}

BleuConfig bleu_config_for(std::string_view bleu_mode, std::string_view signature) {
  const bool lc = signature.find("case:lc") != std::string_view::npos;
  if (bleu_mode == "tokenized") return BleuConfig::tokenized(lc);
  if (bleu_mode == "paper-wmt14") {
    // Our translations are detokenized text (SentencePiece): the 13a tokenizer stands in for the
    // Moses tokenizer that tensor2tensor ran before splitting compounds (tok:13a+compound-split).
    BleuConfig c = BleuConfig::paper_wmt14();
    c.tokenize = BleuTokenizer::k13a;
    c.lowercase = lc;
    return c;
  }
  BleuConfig c = BleuConfig::sacrebleu();
  c.lowercase = lc;
  return c;
}

Summary summarize(const std::vector<double>& values) {
  Summary s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  if (s.n > 1) {
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(sq / (s.n - 1));
  }
  return s;
}

std::string ReportRow::status_text() const {
  const int total = static_cast<int>(runs.size());
  if (done == total) return "done";
  if (failed == total) return "failed";
  if (pending == total) return "pending";
  std::string s = fmt::format("{}/{} done", done, total);
  if (failed) s += fmt::format(", {} failed", failed);
  if (pending) s += fmt::format(", {} pending", pending);
  return s;
}

std::string find_dev_reference(const std::string& row_dir) {
  const fs::path cfg = fs::path(row_dir) / "config.toml";
  if (!file_exists(cfg)) return "";
  toml::table doc;
  try {
    doc = toml::parse_file(cfg.string());
  } catch (const toml::parse_error&) {
    return "";
  }
  std::string candidate;
  const auto data = doc["data"];
  if (auto dt = data["dev_target"].value<std::string>(); dt && !dt->empty()) {
    candidate = *dt;
  } else if (data["synthetic"].is_table()) {
    const auto s = data["synthetic"];
    candidate = (fs::path(data["cache_dir"].value_or(std::string())) /
                 fmt::format("synthetic-{}-{}-{}-{}", s["seed"].value_or(std::int64_t{1}),
                             s["train_pairs"].value_or(std::int64_t{20000}), s["dev_pairs"].value_or(std::int64_t{500}),
                             s["test_pairs"].value_or(std::int64_t{500})) /
                 "dev.tgt")
                    .string();
  }
  if (candidate.empty()) return "";
  if (file_exists(candidate)) return candidate;
  if (fs::path(candidate).is_relative() && file_exists(fs::path(row_dir) / candidate))
    return (fs::path(row_dir) / candidate).string();
  return "";
}

namespace {

// The rows and runs of a suite folder, before summaries.
Report collect_suite(const std::string& run_dir, const ReportOptions& options) {
  const SuiteState state = read_suite_state((fs::path(run_dir) / "suite.json").string());
  Report report;
  report.name = state.name;
  report.source = state.source;
  report.reference = state.reference;
  report.run_dir = run_dir;

  std::map<std::string, std::size_t> index;
  for (const SuiteRowState& s : state.rows) {
    auto [it, inserted] = index.try_emplace(s.name, report.rows.size());
    if (inserted) {
      ReportRow row;
      row.name = s.name;
      row.settings = s.settings;
      row.paper = s.paper;
      report.rows.push_back(std::move(row));
    }
    ReportRow& row = report.rows[it->second];
    if (!row.paper && s.paper) row.paper = s.paper;
    ReportRun run;
    run.seed = s.seed;
    run.dir = (fs::path(run_dir) / s.dir).string();
    run.status = s.status;
    run.error = s.error;
    const fs::path result_path = fs::path(run.dir) / "result.json";
    if (run.status == RowStatus::kDone) {
      if (file_exists(result_path)) {
        try {
          run.result = read_row_result(result_path.string());
        } catch (const std::exception& e) {
          report.warnings.push_back(e.what());
        }
      } else {
        report.warnings.push_back(fmt::format("{} (seed {}) is marked done but has no {}", s.name, s.seed, result_path.string()));
      }
      if (!run.result) run.status = RowStatus::kPending;
    }
    read_run_files(run, report);
    run.dev_reference = options.dev_reference.empty() ? find_dev_reference(run.dir) : options.dev_reference;
    row.runs.push_back(std::move(run));
  }
  return report;
}

}  // namespace

Report build_report(const std::string& run_dir, const ReportOptions& options) {
  Report report = is_train_run_folder(run_dir) ? collect_train_run(run_dir) : collect_suite(run_dir, options);
  report.bootstrap_samples = options.bootstrap_samples;
  report.bootstrap_seed = options.bootstrap_seed;

  for (ReportRow& row : report.rows) {
    std::vector<double> params, steps, secs, tps, ppl, bleu, test_ppl, test_bleu;
    for (const ReportRun& run : row.runs) {
      if (run.status == RowStatus::kFailed) ++row.failed;
      else if (run.status == RowStatus::kPending) ++row.pending;
      if (run.status != RowStatus::kDone) continue;
      ++row.done;
      const RowResult& r = *run.result;
      params.push_back(static_cast<double>(r.parameters));
      steps.push_back(static_cast<double>(r.steps));
      secs.push_back(r.train_seconds);
      tps.push_back(r.tokens_per_second);
      ppl.push_back(r.dev_ppl);
      if (auto test = run.evals.find("test"); test != run.evals.end()) {
        test_ppl.push_back(test->second.ppl);
        test_bleu.push_back(test->second.bleu);
      }
      if (r.bleu_mode.empty()) continue;  // a train folder without a recorded dev evaluation
      bleu.push_back(r.bleu);
      auto kind = std::find_if(report.bleu_kinds.begin(), report.bleu_kinds.end(), [&](const Report::BleuKind& k) {
        return k.mode == r.bleu_mode && k.signature == r.bleu_signature;
      });
      if (kind == report.bleu_kinds.end())
        kind = report.bleu_kinds.insert(report.bleu_kinds.end(), Report::BleuKind{r.bleu_mode, r.bleu_signature, {}});
      if (kind->rows.empty() || kind->rows.back() != row.name) kind->rows.push_back(row.name);
    }
    row.params = summarize(params), row.steps = summarize(steps), row.train_seconds = summarize(secs);
    row.tokens_per_second = summarize(tps), row.dev_ppl = summarize(ppl), row.bleu = summarize(bleu);
    row.test_ppl = summarize(test_ppl), row.test_bleu = summarize(test_bleu);
  }
  if (report.rows.empty()) return report;

  auto base_it = std::find_if(report.rows.begin(), report.rows.end(), [](const ReportRow& r) { return r.name == "base"; });
  if (base_it == report.rows.end()) base_it = report.rows.begin();
  base_it->is_base = true;
  report.base_row = base_it->name;
  const ReportRow& base = *base_it;

  // Per-sentence statistics of a row, its seeds pooled (summed per sentence). Empty with a note
  // when something is missing.
  std::map<std::string, std::vector<std::string>> ref_cache;
  const auto pooled = [&](const ReportRow& row, BleuConfig& config, std::string& note) {
    std::vector<BleuStats> stats;
    bool have_config = false;
    for (const ReportRun& run : row.runs) {
      if (run.status != RowStatus::kDone) continue;
      const fs::path hyp_path = fs::path(run.dir) / "dev.hyp";
      if (!file_exists(hyp_path)) return note = fmt::format("no {}", hyp_path.string()), std::vector<BleuStats>{};
      if (run.dev_reference.empty())
        return note = fmt::format("the dev reference of {} was not found (use --ref)", run.dir), std::vector<BleuStats>{};
      const BleuConfig c = bleu_config_for(run.result->bleu_mode, run.result->bleu_signature);
      if (!have_config) config = c, have_config = true;
      try {
        auto [it, fresh] = ref_cache.try_emplace(run.dev_reference);
        if (fresh) it->second = read_lines(run.dev_reference);
        const std::vector<std::string>& refs = it->second;
        const std::vector<std::string> hyps = read_lines(hyp_path.string());
        if (hyps.size() != refs.size())
          return note = fmt::format("{} has {} lines, the reference {} has {}", hyp_path.string(), hyps.size(),
                                    run.dev_reference, refs.size()),
                 std::vector<BleuStats>{};
        if (stats.empty()) stats.resize(hyps.size());
        if (stats.size() != hyps.size()) return note = "the seeds were scored on different dev sets", std::vector<BleuStats>{};
        for (std::size_t i = 0; i < hyps.size(); ++i) {
          const std::vector<std::string> one{refs[i]};
          stats[i] += refs[i].empty() ? BleuStats{0, 0, std::vector<std::int64_t>(static_cast<std::size_t>(config.max_ngram_order), 0),
                                                   std::vector<std::int64_t>(static_cast<std::size_t>(config.max_ngram_order), 0), 1}
                                      : sentence_bleu_stats(hyps[i], one, config);
        }
      } catch (const std::exception& e) {
        return note = e.what(), std::vector<BleuStats>{};
      }
    }
    if (stats.empty() && note.empty()) note = "no finished seed";
    return stats;
  };

  BleuConfig base_config;
  std::string base_note;
  const std::vector<BleuStats> base_stats = base.done > 0 ? pooled(base, base_config, base_note) : std::vector<BleuStats>{};
  if (base.done == 0) base_note = "the base row has no result";
  for (ReportRow& row : report.rows) {
    if (row.is_base || row.done == 0) continue;
    if (base.done > 0) {
      row.delta_ppl = row.dev_ppl.mean - base.dev_ppl.mean;
      row.delta_bleu = row.bleu.mean - base.bleu.mean;
    }
    if (base_stats.empty()) {
      row.bootstrap_note = base_note.empty() ? "no base statistics" : fmt::format("base row: {}", base_note);
      continue;
    }
    BleuConfig config;
    std::string note;
    const std::vector<BleuStats> stats = pooled(row, config, note);
    if (stats.empty()) {
      row.bootstrap_note = note;
      continue;
    }
    if (stats.size() != base_stats.size()) {
      row.bootstrap_note = fmt::format("{} dev sentences, the base row {}", stats.size(), base_stats.size());
      continue;
    }
    if (bleu_signature(config, 1) != bleu_signature(base_config, 1)) {
      row.bootstrap_note = "scored with another BLEU mode than the base row";
      continue;
    }
    row.bootstrap = paired_bootstrap(base_stats, stats, config, options.bootstrap_samples, options.bootstrap_seed);
  }
  compare_with_paper(report);
  return report;
}

std::string render_report(const Report& report, ReportFormat format) {
  switch (format) {
    case ReportFormat::kTerminal: return render_terminal(report);
    case ReportFormat::kMarkdown: return render_markdown(report);
    case ReportFormat::kCsv: return render_csv(report);
    case ReportFormat::kLatex: return render_latex(report);
    case ReportFormat::kHtml: return render_html(report);
  }
  return render_terminal(report);
}

}  // namespace attnlab::nmt
