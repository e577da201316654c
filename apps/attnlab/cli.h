#pragma once
// The command line's shared pieces (CLI11): typed, range-checked validators whose messages say what
// an option accepts, the options several commands have (stated here once), and how a command is
// registered: each command adds its subcommand to the program's CLI::App and returns what runs it.
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attnlab/name_table.h"
#include "attnlab/suggest.h"

namespace attnlab::app {

// One subcommand of the program and what runs it once its arguments are parsed (exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// --- validators: "--beam: expects a whole number from 1 to 1000, got 'abc'" -----------------
CLI::Validator whole_number(std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max());
CLI::Validator real_number(double min, bool min_allowed = true);  // finite, >= min (or > min)
// A name of `table` (or one of `aliases`), refused with the table's one wording for an unknown name
// (its suggestion among the aliases too).
template <typename E, std::size_t N>
CLI::Validator choice(const NameTable<E, N>& table, std::vector<std::string> aliases = {}) {
  return CLI::Validator(
      [table, aliases](std::string& text) -> std::string {
        if (table.find(text)) return {};
        for (const std::string& a : aliases)
          if (a == text) return {};
        const std::string message = table.unknown(text);
        return message.ends_with("?") ? message : message + did_you_mean(text, aliases);
      },
      [&table] {
        std::string list;
        for (const auto& [value, name] : table) list += (list.empty() ? "" : "|") + std::string(name);
        return list;
      }());
}
CLI::Validator device_name();  // cpu | cuda:N
// One of `names`: "unknown WHAT 'x' (valid: a, b); did you mean 'a'?" otherwise.
CLI::Validator one_of(const std::string& what, std::vector<std::string> names);

// An option given several times (--ref A --ref B) takes one value each time, so a positional that
// follows it stays a positional.
CLI::Option* repeated(CLI::Option* option);

// --- options shared by several commands ------------------------------------------------------
CLI::Option* add_device_option(CLI::App& app, std::string& device, const std::string& what = "the device to run on");
CLI::Option* add_plugin_path_option(CLI::App& app, std::vector<std::string>& folders);
// --set KEY=VALUE (repeatable): a setting over the experiment's (or every suite row's base) value,
// typed and checked like the TOML (attnlab/nmt/experiment/toml_edit.h: command_line_settings).
CLI::Option* add_set_option(CLI::App& app, std::vector<std::string>& settings, const std::string& over);

// Beam search settings (translate, eval): only the ones given replace the defaults.
struct BeamFlags {
  std::optional<std::int64_t> beam;
  std::optional<double> alpha;
  std::optional<std::int64_t> max_length_offset;
};
void add_beam_options(CLI::App& app, BeamFlags& flags);
// --max-length-offset alone (eval, whose --beam and --alpha take lists, has it so).
void add_max_length_offset_option(CLI::App& app, std::optional<std::int64_t>& offset);

// sacreBLEU's short spellings of attnlab bleu's options (-tok 13a, -lc) as the long ones.
std::vector<std::string> sacrebleu_spellings(std::vector<std::string> args);

// Ends every command's --help with one example and its exit statuses (help_footers.cpp).
void add_help_footers(CLI::App& root);

// --- the commands (one file each) ----------------------------------------------------------
Command plugins_command(CLI::App& root);
Command train_command(CLI::App& root);
Command data_synth_command(CLI::App& data);
Command data_batches_command(CLI::App& data);
Command data_shapes_command(CLI::App& data);
Command translate_command(CLI::App& root);
Command score_command(CLI::App& root);
Command average_command(CLI::App& root);
Command bleu_command(CLI::App& root);
Command eval_command(CLI::App& root);
Command run_command(CLI::App& root);
Command check_command(CLI::App& root);
Command config_command(CLI::App& root);
Command completion_command(CLI::App& root);
Command report_command(CLI::App& root);
Command status_command(CLI::App& root);

}  // namespace attnlab::app
