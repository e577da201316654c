#include "attnlab/nmt/suite/suite_keys.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <unistd.h>

#include "attnlab/config/key_log.h"
#include "attnlab/nmt/suite/suite.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

// Every table of a suite, with the fewest values that load; the log records the defaults.
constexpr const char* kProbeSuite = R"(
[suite]
base = "base.toml"
seeds = [1]
[suite.slurm]
[search]
first_rung = 10
max_steps = 20
[vars]
NAME = "x"
[base.training]
eval_every = 10
[rows.NAME]
seeds = [1]
paper = { ppl = 5.0, bleu = 25.0, params_m = 65.0 }
[grids.NAME]
axes = [ { "model.heads" = [1, 2] } ]
)";

// The experiment's own tables: the rows' experiments are read with them, and listed there.
bool experiment_key(const std::string& path) {
  for (const char* t : {"experiment", "data", "vocab", "model", "training", "eval"}) {
    const std::string table(t);
    if (path == table || path.starts_with(table + ".")) return true;
  }
  return false;
}

// What each key of a suite's own tables means (KeyMeaning; `replace` where the reader's default is
// the probe's own, the file's name, or a stand-in the meaning explains).
const KeyMeaning kMeanings[] = {
    {"vars", "values substituted for ${NAME} in the suite's strings (the environment's too: ${NAME:-default})"},
    {"vars.NAME", "one variable", "string, number or boolean"},
    {"suite", "the suite: its name, base experiment, seeds and run folder"},
    {"suite.name", "names the run folder runs/NAME (default: the suite file's name)", "", "", true},
    {"suite.base", "the base experiment file (relative to the suite); [base] tables change it"},
    {"suite.seeds", "seeds of every row (a row may give its own)", "array of integers", "[1]"},
    {"suite.run_dir", "where the rows' folders go (default runs/NAME)"},
    {"suite.reference", "where the paper's values come from, for the report"},
    {"suite.unsupported", "a row a plugin cannot serve: error, fallback or skip", "string", "\"error\""},
    {"suite.slurm", "resources of attnlab run --slurm (its flags override them)"},
    {"suite.slurm.partition", "partition"},
    {"suite.slurm.account", "account"},
    {"suite.slurm.qos", "quality of service"},
    {"suite.slurm.time", "time limit per task (Slurm's format)"},
    {"suite.slurm.gres", "generic resources per task"},
    {"suite.slurm.mem", "memory per task"},
    {"suite.slurm.gpus", "GPUs per task"},
    {"suite.slurm.cpus", "CPUs per task"},
    {"suite.slurm.max_running", "tasks running at once; 0: no limit"},
    {"suite.slurm.sbatch", "further #SBATCH options", "array of strings", "[]"},
    {"suite.slurm.setup", "shell lines run before each task", "array of strings", "[]"},
    {"search", "prune the rows by successive halving (asynchronous)"},
    {"search.method", "the only method: halving"},
    {"search.metric", "dev_ppl (lower is better) or dev_bleu (higher is better)"},
    {"search.eta", "a rung keeps 1/eta of its rows"},
    {"search.first_rung", "steps every row trains before the first decision (required)", "", "", true},
    {"search.max_steps", "every row's training.max_steps (default: the rows' own)", "", "", true},
    {"base", "the base experiment's tables changed for every row ([base.model] ...)"},
    {"rows", "named rows"},
    {"rows.NAME", "one row: experiment keys, dotted (\"model.heads\" = 4), and seeds and paper", "table"},
    {"rows.NAME.seeds", "the row's own seeds (default: the suite's)", "", "", true},
    {"rows.NAME.paper", "the paper's values beside the row in the report"},
    {"rows.NAME.paper.ppl", "the paper's dev perplexity", "", "", true},
    {"rows.NAME.paper.bleu", "the paper's BLEU", "", "", true},
    {"rows.NAME.paper.params_m", "the paper's parameters (millions)", "", "", true},
    {"grids", "grids of rows"},
    {"grids.NAME", "one grid: rows NAME-01, NAME-02, ...", "table"},
    {"grids.NAME.axes", "axes crossed; keys of one axis tied: [ { \"model.heads\" = [1, 4] }, ... ]",
     "array of tables"},
    {"grids.NAME.unsupported", "as suite.unsupported, for this grid's rows", "string", "\"error\""},
};

}  // namespace

std::vector<ExperimentKey> suite_keys() {
  const fs::path dir = fs::temp_directory_path() /
                       fmt::format("attnlab-suite-keys-{}-{}", ::getpid(),
                                   std::chrono::steady_clock::now().time_since_epoch().count());
  fs::create_directories(dir);
  struct Remove {
    fs::path dir;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove{dir};
  std::ofstream(dir / "base.toml") << "[data.synthetic]\n";
  std::ofstream(dir / "suite.toml") << kProbeSuite;
  config::KeyLog log;
  (void)load_suite((dir / "suite.toml").string());
  return with_meanings(log.records(), kMeanings, "suite keys", [](const std::string& path) {
    return !experiment_key(path);
  });
}

}  // namespace attnlab::nmt
