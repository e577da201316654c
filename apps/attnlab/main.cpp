// attnlab: the command-line program.
#include <cstdio>
#include <exception>

#include <fmt/core.h>

#include "attnlab/build_info.h"
#include "attnlab/device.h"
#include "attnlab/error.h"
#include "attnlab/version.h"
#include "attnlab/commands.h"
#include "attnlab/nmt/dist/communicator.h"

namespace {

constexpr const char* kUsage = R"(usage: attnlab <command> [options]

commands:
  plugins [--path DIR]... [--check FILE [--reference ATTENTION] [--device cpu|cuda:N] [--tolerance X]]
                 list every plugin found (family, name, version, file, description, options,
                 and what each attention plugin serves); --check FILE loads one plugin library
                 and runs the conformance kit on it, --reference also compares an attention
                 plugin with another (e.g. scaled_dot) built with the same seed, --tolerance
                 sets the attention checks' largest difference (relative to 1 + |value|; default:
                 the dtype's, or that of the dtype the plugin declares it computes in)
  train EXPERIMENT.toml [--steps N] [--run-dir DIR] [--device cpu|cuda:N]
                 train one configuration into its run folder (resumes an interrupted run)
  data synth --out DIR [--train N] [--dev N] [--test N] [--seed S]
                 write the built-in synthetic parallel corpus
  data batches EXPERIMENT.toml --steps N --out DIR
                 the first N steps' batches, initial weights and recipe of a run, for
                 training the same in another implementation (tools/pytorch_reference_train.py)
  translate --checkpoint RUN_OR_FILE [--input F] [--output F] [--beam 4] [--alpha 0.6]
                 [--max-length-offset 50] [--batch-tokens N] [--device D]
                 translate text (stdin to stdout by default) with beam search
  score --checkpoint RUN_OR_FILE --source F --target F [--device D]
                 per-sentence log-probabilities of given translations
  average RUN_DIR [--last N] [--out FILE]
                 average the last N checkpoints of a run (the paper: 5 for base, 20 for big)
  bleu --ref REF [--ref REF2]... [HYP] [--tokenize 13a|intl|char|none] [--lowercase]
       [--smooth exp|floor|add-k|none] [--smooth-value X] [--compound-split] [--chrf] [--score-only]
                 corpus BLEU of HYP (default: standard input) as sacreBLEU 2.6.0 computes it,
                 with its signature; --compound-split: paper-style WMT14 tokenized BLEU
  eval RUN_OR_CHECKPOINT [--test] [--source F --target F] [--beam N] [--alpha A] [--bleu MODE]
                 perplexity per wordpiece (with and without label smoothing) and BLEU of a run
  run SUITE.toml [--rows A1,E] [--jobs N] [--devices cuda:0,cuda:1]
                 train and evaluate every row of a suite; finished rows are skipped, an
                 interrupted row resumes, a changed row is retrained
  run SUITE.toml --slurm [--dry-run] [--partition P] [--account A] [--qos Q] [--time T]
                 [--gpus N] [--gres G] [--cpus N] [--mem M] [--max-running N] [--sbatch OPT]...
                 [--setup LINE]...
                 submit the rows that need work as one Slurm job array (options over
                 [suite.slurm]); finished, running and queued rows are not resubmitted;
                 --dry-run prints the sbatch script
  status SUITE.toml | SUITE_RUN_DIR | RUN_DIR
                 every row's state: done, running (step, ETA, last dev ppl), queued, failed
                 (with its log's last lines), stopped, not started; reads Slurm's queue
  train under mpirun -np N / srun -n N
                 data-parallel training over N processes (MPI on the CPU, NCCL on GPUs;
                 docs/scaling.md)
  check SUITE.toml [--format text|markdown|csv]
                 resolve and validate every row of an experiment suite (plugins, options, what
                 the attention plugin serves, its fallback); print each row's settings,
                 dimensions and parameter count; list missing data files
                 (exit 0: valid, 3: valid but data missing, 1: errors)
  report RUN_DIR [--format terminal|markdown|csv|latex|html] [--output FILE] [--ref DEV_REF]
                 the table of a suite run: settings, parameters, steps, time, dev perplexity,
                 BLEU (mean and std over seeds), changes and a paired bootstrap test against the
                 base row, the paper's values; html adds learning curves (inline SVG)
  version        print the version, build id, CUDA availability and data-parallel backends
)";

int command_version() {
  fmt::print("attnlab {}\nbuild id: {}\ncuda: {}\n", ATTNLAB_VERSION_STRING, attnlab::core_build_id(),
             attnlab::cuda_built() ? fmt::format("built, {} device(s) visible", attnlab::cuda_device_count())
                                   : std::string("not built"));
  std::string nccl;
  try {
    nccl = "NCCL " + attnlab::nmt::nccl_version() + " loads";
  } catch (const std::exception&) {
    nccl = "no NCCL library found";
  }
  fmt::print("data parallel: {}; {}\n", attnlab::nmt::mpi_built() ? "MPI built" : "MPI not built", nccl);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  attnlab::app::Args args(argv + 2, argv + argc);
  try {
    if (command == "plugins") return attnlab::app::command_plugins(args);
    if (command == "train") return attnlab::app::command_train(args);
    if (command == "data") return attnlab::app::command_data(args);
    if (command == "translate") return attnlab::app::command_translate(args);
    if (command == "score") return attnlab::app::command_score(args);
    if (command == "average") return attnlab::app::command_average(args);
    if (command == "bleu") return attnlab::app::command_bleu(args);
    if (command == "eval") return attnlab::app::command_eval(args);
    if (command == "run") return attnlab::app::command_run(args);
    if (command == "check") return attnlab::app::command_check(args);
    if (command == "report") return attnlab::app::command_report(args);
    if (command == "status") return attnlab::app::command_status(args);
    if (command == "version" || command == "--version") return command_version();
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    fmt::print(stderr, "attnlab: unknown command '{}'\n\n{}", command, kUsage);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attnlab {}: error: {}\n", command, e.what());
    return 1;
  }
}
