#pragma once
// Internal to the report: one writer per format (write_<format>.cpp), chosen by render_report.
#include <string>

#include "attnlab/nmt/report/report.h"

namespace attnlab::nmt::detail {

std::string render_terminal(const Report& report);
std::string render_markdown(const Report& report);
std::string render_csv(const Report& report);
std::string render_latex(const Report& report);
std::string render_html(const Report& report);

}  // namespace attnlab::nmt::detail
