#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "attnlab/error.h"
#include "attnlab/nmt/cluster/slurm.h"
#include "attnlab/nmt/cluster/status.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "nmt_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

std::string suite_text(const std::string& slurm_table) {
  return R"([suite]
name = "tiny"
)" + slurm_table + "\n" + nmt::testing::kTinySuiteBase + R"([base.training]
max_steps = 50
[rows.wide]
"model.d_ff" = 128
)";
}

}  // namespace

TEST_CASE("[suite.slurm] is read with the suite, its mistakes located") {
  testing::TempDir dir("slurm_settings");
  const std::string path = dir.file("suite.toml");
  testing::write_text(path, suite_text(R"([suite.slurm]
partition = "gpu"
account = "nmt"
time = "12:00:00"
gpus = 1
cpus = 8
mem = "64G"
max_running = 4
sbatch = ["--constraint=h100"]
setup = ["module load cuda"]
)"));
  const Suite suite = load_suite(path);
  CHECK(suite.slurm.partition == "gpu");
  CHECK(suite.slurm.account == "nmt");
  CHECK(suite.slurm.time == "12:00:00");
  CHECK(suite.slurm.gpus == 1);
  CHECK(suite.slurm.cpus == 8);
  CHECK(suite.slurm.mem == "64G");
  CHECK(suite.slurm.max_running == 4);
  REQUIRE(suite.slurm.sbatch.size() == 1);
  CHECK(suite.slurm.sbatch[0] == "--constraint=h100");
  REQUIRE(suite.slurm.setup.size() == 1);

  testing::write_text(path, suite_text("[suite.slurm]\npartiton = \"gpu\"\n"));
  CHECK_THROWS_WITH_AS(load_suite(path), doctest::Contains("suite.slurm.partiton: unknown key"), Error);
  CHECK_THROWS_WITH_AS(load_suite(path), doctest::Contains("did you mean 'partition'"), Error);
  testing::write_text(path, suite_text("[suite.slurm]\ngpus = -1\n"));
  CHECK_THROWS_WITH_AS(load_suite(path), doctest::Contains("suite.toml:4:8: suite.slurm.gpus must be >= 0"), Error);
}

TEST_CASE("the sbatch script is one array task per row, each running the row runner") {
  testing::TempDir dir("slurm_script");
  const std::string path = dir.file("suite.toml");
  testing::write_text(path, suite_text("[suite.slurm]\npartition = \"gpu\"\ngpus = 2\nmax_running = 3\n"));
  const Suite suite = load_suite(path);
  SlurmSubmitOptions o;
  o.settings = suite.slurm;
  o.program = "/opt/attn lab/bin/attnlab";
  o.workdir = "/home/o'neil/exp";
  o.settings.setup = {"source env.sh"};
  const std::string script = sbatch_script(suite, {&suite.rows[0], &suite.rows[1]}, o);
  CHECK(script.starts_with("#!/bin/bash\n"));
  CHECK(script.find("#SBATCH --array=0-1%3\n") != std::string::npos);
  CHECK(script.find("#SBATCH --partition=gpu\n") != std::string::npos);
  CHECK(script.find("#SBATCH --gres=gpu:2\n") != std::string::npos);
  CHECK(script.find("#SBATCH --job-name=" + slurm_job_name(suite) + "\n") != std::string::npos);
  CHECK(script.find("#SBATCH --signal=B:TERM@120\n") != std::string::npos);
  CHECK(script.find("rows=( 'base@1' 'wide@1' )") != std::string::npos);
  CHECK(script.find("'" + suite.rows[1].config.run_dir + "'") != std::string::npos);
  CHECK(script.find("cd '/home/o'\\''neil/exp'\n") != std::string::npos);
  CHECK(script.find("source env.sh\n") != std::string::npos);
  CHECK(script.find("exec '/opt/attn lab/bin/attnlab' run '" + fs::absolute(path).string() +
                    "' --row \"$row\" --quiet") != std::string::npos);
  // The job name tells suites with the same name in different folders apart.
  CHECK(slurm_job_name("tiny", dir.file("a")) != slurm_job_name("tiny", dir.file("b")));
}

TEST_CASE("a dry run decides and writes the script without touching the run folder") {
  testing::TempDir dir("slurm_dry");
  const std::string path = dir.file("suite.toml");
  testing::write_text(path, suite_text(""));
  Suite suite = load_suite(path);
  suite.run_dir = dir.file("runs");
  for (auto& row : suite.rows) row.config.run_dir = row_dir(suite, row);
  // base is finished, wide has no folder yet.
  fs::create_directories(suite.rows[0].config.run_dir);
  write_row_result(suite.rows[0].config.run_dir + "/result.json", RowResult{});
  SlurmSubmitOptions o;
  o.program = "attnlab";
  o.workdir = dir.path().string();
  o.dry_run = true;
  const SlurmSubmission s = submit_to_slurm(suite, o);
  REQUIRE(s.rows.size() == 2);
  CHECK(s.rows[0].reason == "done");
  CHECK(s.rows[1].reason.empty());
  CHECK(s.submitted() == 1);
  CHECK(s.script.find("#SBATCH --array=0-0\n") != std::string::npos);
  CHECK(s.script.find("rows=( 'wide@1' )") != std::string::npos);
  CHECK(s.job_id.empty());
  CHECK_FALSE(fs::exists(fs::path(suite.run_dir) / "slurm"));
}

TEST_CASE("status reads each row's state from its folder") {
  testing::TempDir dir("status");
  const std::string path = dir.file("suite.toml");
  testing::write_text(path, suite_text("[rows.narrow]\n\"model.d_ff\" = 16\n[rows.deep]\n\"model.encoder_layers\" = 2\n"
                                       "[rows.fresh]\n\"model.heads\" = 2\n"));
  // suite_text puts rows.wide last; the extra rows come before it in the file.
  Suite suite = load_suite(path);
  const fs::path runs = dir.path() / "runs";
  std::map<std::string, std::string> dirs;
  for (auto& row : suite.rows) dirs[row.name] = row.config.run_dir;
  // base: done.
  fs::create_directories(dirs["base"]);
  RowResult done;
  done.steps = 50;
  done.dev_ppl = 12.5;
  done.bleu = 30.25;
  write_row_result(dirs["base"] + "/result.json", done);
  // narrow: running (this test holds its lock), at step 20 of 50, 0.5 s per step.
  fs::create_directories(dirs["narrow"]);
  testing::write_text(dirs["narrow"] + "/metrics.jsonl",
                      "{\"kind\":\"start\",\"step\":0,\"parameters\":10}\n"
                      "{\"kind\":\"train\",\"step\":10,\"elapsed\":5.0,\"loss\":3.0}\n"
                      "{\"kind\":\"dev\",\"step\":10,\"dev_ppl\":40.0}\n"
                      "{\"kind\":\"train\",\"step\":20,\"elapsed\":10.0,\"loss\":2.0}\n"
                      "{\"kind\":\"tra");  // a torn last line
  const FolderLock lock = FolderLock::acquire(dirs["narrow"], "run folder");
  // deep: failed.
  fs::create_directories(dirs["deep"]);
  testing::write_text(dirs["deep"] + "/row-error.txt", "out of memory\n");
  testing::write_text(dirs["deep"] + "/run.log", "line 1\nline 2\nline 3\nlast words\n");
  // wide: stopped (a checkpoint, nobody running it).
  fs::create_directories(dirs["wide"] + "/checkpoints");
  testing::write_text(dirs["wide"] + "/checkpoints/step-00000034.safetensors", "");
  testing::write_text(dirs["wide"] + "/metrics.jsonl", "{\"kind\":\"train\",\"step\":30,\"elapsed\":3.0}\n");
  // fresh: never started.

  const StatusReport report = read_status(path);
  std::map<std::string, RowProgress> rows;
  for (const auto& r : report.rows) rows[r.name] = r;
  CHECK(rows["base"].phase == RowPhase::kDone);
  CHECK(rows["base"].bleu == doctest::Approx(30.25));
  CHECK(rows["narrow"].phase == RowPhase::kRunning);
  CHECK(rows["narrow"].step == 20);
  CHECK(rows["narrow"].max_steps == 50);
  REQUIRE(rows["narrow"].eta_seconds.has_value());
  CHECK(*rows["narrow"].eta_seconds == doctest::Approx(15.0));
  CHECK(rows["narrow"].dev_ppl == doctest::Approx(40.0));
  CHECK(rows["narrow"].where.find("pid " + std::to_string(::getpid())) != std::string::npos);
  CHECK(rows["deep"].phase == RowPhase::kFailed);
  CHECK(rows["deep"].error == "out of memory");
  REQUIRE(rows["deep"].log_tail.size() == 3);
  CHECK(rows["deep"].log_tail.back() == "last words");
  CHECK(rows["wide"].phase == RowPhase::kStopped);
  CHECK(rows["wide"].step == 34);  // its newest checkpoint, ahead of the last log line
  CHECK(rows["fresh"].phase == RowPhase::kNotStarted);

  const std::string text = format_status(report);
  CHECK(text.find("5 row(s): 1 done, 1 running, 1 failed, 1 stopped, 1 not started") != std::string::npos);
  CHECK(text.find("    error: out of memory") != std::string::npos);
  CHECK(text.find("    | last words") != std::string::npos);
  (void)runs;
}

