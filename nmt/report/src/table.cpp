#include "table.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>

#include <fmt/core.h>

namespace attnlab::nmt::detail {

namespace fs = std::filesystem;

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

Cell text_cell(std::string s) { return Cell{std::move(s), "", "", false}; }
Cell num_cell(std::string s) { return Cell{std::move(s), "", "", true}; }
Cell stat_cell(const Summary& s, int digits) {
  if (s.n == 0) return num_cell("");
  if (s.n == 1) return num_cell(fixed(s.mean, digits));
  return Cell{"", fixed(s.mean, digits), fixed(s.std, digits), true};
}

std::string display_path(const std::string& path) {
  if (!fs::path(path).is_absolute()) return path;
  std::error_code ec;
  const fs::path relative = fs::relative(path, fs::current_path(ec), ec);
  return ec || relative.empty() ? path : relative.string();
}

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

bool any_manifest(const Report& r) {
  for (const ReportRow& row : r.rows)
    for (const ReportRun& run : row.runs)
      if (!run.manifest.empty()) return true;
  return false;
}

// "same" when every run's manifest agrees with the base row's, "differs" when one does not,
// "none" when the row's folders have none.
std::string manifest_status(const ReportRow& row) {
  bool any = false;
  for (const ReportRun& run : row.runs) {
    if (run.manifest.empty()) continue;
    any = true;
    if (!run.manifest_differences.empty()) return "differs";
  }
  return any ? "same" : "none";
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
  const bool manifests = any_manifest(report);
  if (manifests) t.columns.push_back({"manifest", "manifest", false});
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
    if (manifests) c.push_back(text_cell(manifest_status(row)));
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
  std::vector<std::string> out;
  for (const Report::Source& s : report.sources)
    out.push_back(fmt::format("{}: {}{}{}", s.label, display_path(s.dir), s.name.empty() ? "" : fmt::format(", suite {}", s.name),
                              s.file.empty() ? "" : fmt::format(" ({})", display_path(s.file))));
  for (std::string& line : agreement_lines(report)) out.push_back(std::move(line));
  for (std::string& line : search_notes(report)) out.push_back(std::move(line));
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
            row.name, run.seed, display_path(e.reference), e.bleu, e.bleu_mode, e.bleu_signature, e.sacrebleu, e.beam, e.alpha,
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
      else if (run.status == RowStatus::kSkipped)
        out.push_back(fmt::format("{} (seed {}) skipped (unsupported = \"skip\"): {}", row.name, run.seed, run.error));
    if (!row.same_as.empty())
      out.push_back(fmt::format("{}: the same configuration and seeds as {}: trained once, the same runs", row.name,
                                row.same_as));
    if (!row.bootstrap_note.empty() && !row.is_base && row.done > 0)
      out.push_back(fmt::format("{}: no bootstrap test: {}", row.name, row.bootstrap_note));
  }
  if (any_manifest(report)) {
    out.push_back("manifest: each run's manifest.json (versions, plugin files and hashes, data and vocabulary "
                  "hashes, machine, configuration) against the base row's; \"differs\" where they disagree in "
                  "anything the row does not set itself");
    for (const ReportRow& row : report.rows)
      for (const ReportRun& run : row.runs) {
        if (run.manifest.empty()) continue;
        std::string line = fmt::format("manifest of {} (seed {}): {}", row.name, run.seed, display_path(run.manifest));
        if (!run.manifest_differences.empty()) {
          line += "; differs from the base row's in";
          for (std::size_t i = 0; i < run.manifest_differences.size(); ++i)
            line += (i ? "; " : " ") + run.manifest_differences[i];
        }
        out.push_back(line);
      }
  }
  for (const auto& w : report.warnings) out.push_back(fmt::format("warning: {}", w));
  return out;
}
std::string plain_cell(const Cell& c) { return c.mean.empty() ? c.text : c.mean + " ± " + c.sd; }

}  // namespace attnlab::nmt::detail
