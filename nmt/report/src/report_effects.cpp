// attnlab report: our Table 3 effects beside the paper's. For each row and metric (dev PPL, BLEU):
// the paper's change against its base row, whether ours has the same sign, and whether ours is
// outside the noise (the seed noise floor of the base row and the paired bootstrap).
#include <cmath>

#include <fmt/core.h>

#include "attnlab/nmt/report/report.h"

namespace attnlab::nmt {
namespace {

constexpr double kTwoSidedLevel = 0.025;  // each tail of a 5 % two-sided test

std::optional<double> paper_delta(const ReportRow& row, const ReportRow& base, std::optional<double> PaperReference::*metric) {
  if (!row.paper || !base.paper) return std::nullopt;
  const std::optional<double>& ours = (*row.paper).*metric;
  const std::optional<double>& base_value = (*base.paper).*metric;
  if (!ours || !base_value) return std::nullopt;
  // The paper's numbers have 2 (PPL) or 1 (BLEU) decimals: round away float noise of the difference.
  return std::round((*ours - *base_value) * 1e6) / 1e6;
}

void judge(EffectCheck& effect, std::optional<double> ours, bool outside_noise, const std::string& row,
           Report::Agreement& tally) {
  if (!ours || !effect.paper_delta || *effect.paper_delta == 0.0) return;
  effect.agrees = (*ours > 0.0 && *effect.paper_delta > 0.0) || (*ours < 0.0 && *effect.paper_delta < 0.0);
  effect.outside_noise = outside_noise;
  ++tally.compared;
  if (*effect.agrees) {
    ++tally.agree;
    if (outside_noise) ++tally.agree_outside_noise;
  } else if (outside_noise) {
    tally.differ_outside_noise.push_back(row);
  }
}

}  // namespace

std::string EffectCheck::verdict() const {
  if (!agrees) return "";
  return std::string(*agrees ? "agrees" : "differs") + (outside_noise ? "*" : "");
}

std::string Report::Agreement::summary(std::string_view metric) const {
  std::string line = fmt::format("{}: direction agrees on {} of {} rows ({} significant)", metric, agree, compared,
                                 agree_outside_noise);
  if (!differ_outside_noise.empty()) {
    line += "; against the paper beyond the noise:";
    for (const auto& r : differ_outside_noise) line.append(" ").append(r);
  }
  return line;
}

void compare_with_paper(Report& report) {
  report.ppl_agreement = {};
  report.bleu_agreement = {};
  report.ppl_noise.reset();
  report.bleu_noise.reset();
  const ReportRow* base = nullptr;
  for (const ReportRow& row : report.rows)
    if (row.is_base) base = &row;
  if (!base) return;
  if (base->done >= 2) {
    report.ppl_noise = 2.0 * base->dev_ppl.std;
    report.bleu_noise = 2.0 * base->bleu.std;
  }
  for (ReportRow& row : report.rows) {
    row.ppl_effect = {};
    row.bleu_effect = {};
    if (row.is_base) continue;
    row.ppl_effect.paper_delta = paper_delta(row, *base, &PaperReference::ppl);
    row.bleu_effect.paper_delta = paper_delta(row, *base, &PaperReference::bleu);
    const bool ppl_outside = row.delta_ppl && report.ppl_noise && std::abs(*row.delta_ppl) > *report.ppl_noise;
    bool bleu_outside = false;
    if (row.delta_bleu && row.bootstrap) {
      const bool tested = std::min(row.bootstrap->p_value, row.bootstrap->p_worse) < kTwoSidedLevel;
      bleu_outside = tested && (!report.bleu_noise || std::abs(*row.delta_bleu) > *report.bleu_noise);
    }
    judge(row.ppl_effect, row.delta_ppl, ppl_outside, row.name, report.ppl_agreement);
    judge(row.bleu_effect, row.delta_bleu, bleu_outside, row.name, report.bleu_agreement);
  }
}

}  // namespace attnlab::nmt
