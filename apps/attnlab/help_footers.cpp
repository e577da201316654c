// The end of every command's --help: one example and the exit statuses, in one table, so that
// `attnlab COMMAND --help` always says how to call it and what its exit status means. A test
// (cli/help-has-examples-defaults-and-exit-codes) checks that every command has them.
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "attnlab/cli.h"

namespace attnlab::app {
namespace {

struct Footer {
  std::string_view command, example, exit_codes;
};

// The statuses every command shares, after its own.
constexpr std::string_view kCommon = "1 an error (the message says what), 2 a bad command line";

constexpr Footer kFooters[] = {
    {"plugins", "attnlab plugins --check build/lib/attnlab/plugins/attnlab_attention_flash.so",
     "0 every plugin loaded (with --check: every conformance check passed), 1 a plugin did not load or a check "
     "failed"},
    {"train", "attnlab train experiments/quickstart.toml --steps 200",
     "0 trained to its last step, 130 interrupted (run it again to resume from the last checkpoint)"},
    {"data synth", "attnlab data synth --out corpus --train 2000", "0 written"},
    {"data batches", "attnlab data batches experiments/quickstart.toml --steps 40 --out batches", "0 written"},
    {"data shapes", "attnlab data shapes experiments/multi30k.toml", "0 printed"},
    {"translate", "attnlab translate --checkpoint runs/quickstart --beam 4 < source.txt > hyp.txt", "0 translated"},
    {"score", "attnlab score --checkpoint runs/quickstart --source src.txt --target hyp.txt", "0 scored"},
    {"average", "attnlab average runs/quickstart --last 5", "0 the averaged checkpoint written"},
    {"bleu", "attnlab bleu hyp.de --ref ref.de --tokenize 13a", "0 scored"},
    {"eval", "attnlab eval runs/quickstart --test", "0 evaluated and recorded in the run folder"},
    {"run", "attnlab run experiments/table3-smoke.toml --jobs 2",
     "0 every row finished (or was already), 4 a row failed (the others ran; attnlab status names it), "
     "130 interrupted (run it again to resume)"},
    {"status", "attnlab status runs/table3-smoke", "0 no row failed, 4 a row failed"},
    {"check", "attnlab check experiments/table3.toml --format csv > rows.csv",
     "0 valid and runnable here, 3 valid but not runnable here (a data file missing, a device this machine "
     "lacks)"},
    {"config", "attnlab config experiments/multi30k.toml --set model.dropout=0.2", "0 printed"},
    {"completion", "attnlab completion bash", "0 printed"},
    {"report", "attnlab report runs/positions runs/norms --base positions/base --format md -o report.md",
     "0 written"},
};

// "data synth" for the subcommand synth of data.
std::string path_of(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* p = app.get_parent(); p && p->get_parent(); p = p->get_parent()) path = p->get_name() + " " + path;
  return path;
}

void add(CLI::App& app) {
  // An empty list's captured default ("=[]") says nothing.
  for (CLI::Option* o : app.get_options({}))
    if (o->get_default_str() == "[]") o->default_str("");
  for (CLI::App* sub : app.get_subcommands({})) {
    const std::string path = path_of(*sub);
    for (const Footer& f : kFooters)
      if (f.command == path)
        sub->footer(fmt::format("Example:\n  {}\n\nExit status: {}, {}.", f.example, f.exit_codes, kCommon));
    add(*sub);
  }
}

}  // namespace

void add_help_footers(CLI::App& root) { add(root); }

}  // namespace attnlab::app
