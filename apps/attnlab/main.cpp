// attnlab: the command-line program. Every subcommand declares its options with CLI11 (cli.h);
// `attnlab COMMAND --help` lists them, a bad value is refused naming the option and what it accepts.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/build_info.h"
#include "attnlab/commands.h"
#include "attnlab/device.h"
#include "attnlab/env.h"
#include "attnlab/error.h"
#include "attnlab/nmt/dist/communicator.h"
#include "attnlab/suggest.h"
#include "attnlab/version.h"
#include "wait_policy.h"

namespace {

// With --verbose: attnlab's environment variables that are set (attnlab/env.h), each with what it
// does; a switch's text is checked by the one rule, so a misspelt value is an error here too.
void print_environment() {
  const auto set = attnlab::env::set_now(/*numerics_only=*/false);
  if (set.empty()) {
    fmt::print("environment: none of attnlab's {} variables is set\n", attnlab::env::variables().size());
    return;
  }
  fmt::print("environment ({} of attnlab's {} variables set):\n", set.size(), attnlab::env::variables().size());
  for (const auto& [name, text] : set) {
    for (const attnlab::env::Variable& v : attnlab::env::variables()) {
      if (v.name != name) continue;
      if (v.kind == attnlab::env::Kind::flag) attnlab::env::flag(name);
      fmt::print("  {}={}  ({}{})\n", name, text, v.what, v.numerics ? "; changes the numbers a run computes" : "");
    }
  }
}

int print_version(bool verbose) {
  fmt::print("attnlab {}\nbuild id: {}\ncuda: {}\n", ATTNLAB_VERSION_STRING, attnlab::core_build_id(),
             attnlab::cuda_built() ? fmt::format("built, {} device(s) visible; kernels for {}",
                                                 attnlab::cuda_device_count(), attnlab::cuda_architectures())
                                   : std::string("not built"));
  std::string nccl;
  try {
    nccl = "NCCL " + attnlab::nmt::nccl_version() + " loads";
  } catch (const std::exception&) {
    nccl = "no NCCL library found";
  }
  fmt::print("data parallel: {}; {}\n", attnlab::nmt::mpi_built() ? "MPI built" : "MPI not built", nccl);
  if (verbose) print_environment();
  return 0;
}

// The deepest subcommand the user named ("attnlab", "eval", "data batches").
std::string command_path(const CLI::App& root) {
  std::string path;
  const CLI::App* app = &root;
  for (;;) {
    const auto subs = app->get_subcommands();
    if (subs.empty()) break;
    app = subs.front();
    path += (path.empty() ? "" : " ") + app->get_name();
  }
  return path;
}

// The innermost subcommand the command line chose (the root where none).
const CLI::App* chosen_app(const CLI::App& root) {
  const CLI::App* app = &root;
  while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
  return app;
}

// "; did you mean '--steps'?" for the first option of `args` that `app` does not have and that is
// close to one it has (empty when none is).
std::string option_hint(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  for (const std::string& a : args) {
    if (a.size() < 3 || a.rfind("--", 0) != 0) continue;
    const std::string name = a.substr(0, a.find('='));
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    const std::string hint = attnlab::did_you_mean(name, names);
    if (!hint.empty()) return hint;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnlab::app;
  settle_openmp_wait_policy(argv);
  CLI::App root{"attnlab: the Transformer of \"Attention Is All You Need\", for ablation research.\n"
                "Data-parallel training: run `attnlab train` under mpirun -np N or srun -n N (docs/scaling.md).",
                "attnlab"};
  root.footer("attnlab COMMAND --help: the options of one command, an example and its exit statuses");
  // Every option's default in --help ("[4]"); subcommands inherit this.
  root.option_defaults()->always_capture_default();
  bool version = false;
  root.add_flag("--version", version, "print the version, build id, CUDA availability and data-parallel backends");
  bool verbose = false;
  root.add_subcommand("version", "print the version, build id, CUDA availability and data-parallel backends")
      ->add_flag("--verbose", verbose, "also the attnlab environment variables that are set, and what each does");
  CLI::App* data = root.add_subcommand(
      "data", "corpora: the built-in synthetic one, a run's batches for other implementations, batch shapes");
  data->require_subcommand(1);
  const std::vector<Command> commands = {
      plugins_command(root),      train_command(root),   data_synth_command(*data), data_batches_command(*data),
      data_shapes_command(*data), translate_command(root), score_command(root),   average_command(root),
      bleu_command(root),         eval_command(root),    run_command(root),     status_command(root),
      check_command(root),        config_command(root),  report_command(root),  completion_command(root)};
  add_help_footers(root);
  if (argc < 2) {
    fmt::print(stderr, "{}", root.help());
    return 2;
  }
  std::vector<std::string> args(argv, argv + argc);
  if (args[1] == "bleu") args = sacrebleu_spellings(std::move(args));
  std::vector<char*> pointers;
  for (auto& a : args) pointers.push_back(a.data());
  try {
    root.parse(argc, pointers.data());
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string where = command_path(root);
    if (where.empty() && dynamic_cast<const CLI::ExtrasError*>(&e)) {
      std::vector<std::string> names;
      for (const CLI::App* c : root.get_subcommands({})) names.push_back(c->get_name());
      fmt::print(stderr, "attnlab: unknown command '{}'{}\nsee: attnlab --help\n", argv[1],
                 attnlab::did_you_mean(argv[1], names));
      return 2;
    }
    const std::string hint = dynamic_cast<const CLI::ExtrasError*>(&e) ? option_hint(*chosen_app(root), args) : "";
    fmt::print(stderr, "attnlab{}{}: error: {}{}\nsee: attnlab {}--help\n", where.empty() ? "" : " ", where, e.what(),
               hint, where.empty() ? "" : where + " ");
    return 2;
  }
  const std::string where = command_path(root);
  try {
    if (version || where == "version") return print_version(verbose);
    for (const Command& c : commands)
      if (c.app->parsed()) return c.run();
    fmt::print(stderr, "{}", root.help());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attnlab {}: error: {}\n", where, e.what());
    return 1;
  }
}
