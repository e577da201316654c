#!/usr/bin/env bash
# A suite as a Slurm job array on a real one-node cluster that this test starts itself (munged,
# slurmctld and slurmd on localhost, their configuration and state in the scratch folder):
#  1. `attnlab run --slurm --dry-run` prints the array script and submits nothing;
#  2. `attnlab run --slurm` runs every row; one row's task is cancelled (scancel) mid-row;
#     `attnlab status` shows the half-finished suite; submitting again sends only that row,
#     which resumes from its checkpoint: nothing lost, no step trained twice;
#  3. every row ends with the folder (row hash) and the results of a local `attnlab run`;
#  4. `srun --mpi=pmix -n 2 attnlab train` trains data parallel (MPI through Slurm's PMIx) and ends
#     with the weights of one process with accumulate = 2, bit for bit.
# usage: slurm_suite.sh ATTNLAB_PROGRAM CHECKPOINT_DIFF
here=$(cd "$(dirname "$0")" && pwd)  # before scratch.sh moves to the scratch folder
source "$here/scratch.sh"
checkpoint_diff=$2
source "$here/slurm_cluster.sh"

# --- the suite, locally and on the cluster ----------------------------------------------------
suite() {
  printf '[suite]\nname = "smoke"\n[suite.slurm]\ncpus = 1\ntime = "00:30:00"\n'
  printf '[base.experiment]\nthreads = 1\n'
  tiny_suite_base
  cat <<'TOML'
[base.training]
batch_tokens = 500
max_steps = 60
warmup_steps = 20
eval_every = 60
checkpoint_every = 10
checkpoint_every_seconds = 0
[base.eval]
beam = 1
[rows.narrow]
"model.d_ff" = 32
"experiment.threads" = 0
[rows.long]
"training.max_steps" = 200
"training.eval_every" = 100
TOML
}
mkdir local slurm
suite >local/suite.toml
suite >slurm/suite.toml
# narrow leaves threads at 0: one thread here as on Slurm, where its task is given one CPU.
(cd local && OMP_NUM_THREADS=1 "$attnlab" run suite.toml --quiet >run.log 2>&1) || { cat local/run.log; exit 1; }

cd slurm
"$attnlab" run suite.toml --slurm --dry-run >dry.txt 2>dry.log
grep -q '^#SBATCH --array=0-2$' dry.txt || { echo "dry run: no 3-task array"; cat dry.txt; exit 1; }
grep -q '^#SBATCH --cpus-per-task=1$' dry.txt || { echo "dry run: [suite.slurm] cpus ignored"; exit 1; }
[ ! -e runs/smoke/slurm ] || { echo "the dry run wrote the run folder"; exit 1; }
[ -z "$(squeue --noheader)" ] || { echo "the dry run submitted"; exit 1; }

"$attnlab" run suite.toml --slurm >submit.txt 2>submit.log || { cat submit.txt submit.log; exit 1; }
job=$(sed -n 's/.*Slurm job array \([0-9]*\) .*/\1/p' submit.txt)
[ -n "$job" ] || { echo "no job id"; cat submit.txt; exit 1; }
long_task=$(awk -F'\t' '$4 == "long@1" {print $2}' runs/smoke/slurm/jobs.tsv)
checkpoint() { compgen -G "runs/smoke/long-s1-*/checkpoints/step-00000040.safetensors" >/dev/null; }
# The row is stopped as soon as its checkpoint is seen (it would finish its 200 steps while status
# starts on a loaded machine), and continued after the cancel, which it then takes as before.
stop_long() {
  checkpoint || return 1
  long_pid=$(awk '{print $2}' runs/smoke/long-s1-*/lock)
  kill -STOP "$long_pid"
}
wait_for 300 "the long row's step-40 checkpoint" stop_long
"$attnlab" status runs/smoke >status-running.txt
scancel "${job}_${long_task}"
kill -CONT "$long_pid"
wait_for 300 "the other rows to finish" queue_empty
"$attnlab" status runs/smoke >status-half.txt || true
cat status-running.txt status-half.txt
grep -Eq '^long +1 +running ' status-running.txt || { echo "status did not show the long row running"; exit 1; }
grep -Eq '^long +1 +stopped ' status-half.txt || { echo "status did not show the cancelled row stopped"; exit 1; }
grep -Eq '^base +1 +done ' status-half.txt || { echo "status did not show base done"; exit 1; }
! compgen -G "runs/smoke/long-s1-*/result.json" >/dev/null || { echo "the cancelled row finished anyway"; exit 1; }

"$attnlab" run suite.toml --slurm >resubmit.txt 2>resubmit.log || { cat resubmit.txt resubmit.log; exit 1; }
grep -q "1 row(s) submitted" resubmit.txt || { echo "resubmission sent more than the cancelled row"; cat resubmit.log; exit 1; }
grep -q "^base (seed 1): done" resubmit.log || { cat resubmit.log; exit 1; }
wait_for 300 "the resubmitted row" queue_empty
"$attnlab" status runs/smoke >status-done.txt
cat status-done.txt
grep -q "3 row(s): 3 done" status-done.txt || { echo "not every row finished"; cat runs/smoke/long-s1-*/run.log; exit 1; }
grep -q "resumed from .*step-" runs/smoke/long-s1-*/run.log || { echo "the long row did not resume"; cat runs/smoke/long-s1-*/run.log; exit 1; }
grep -q '"resumed":true' runs/smoke/long-s1-*/metrics.jsonl || { echo "no resumed start in metrics.jsonl"; exit 1; }
# Each step trained once: the log's train steps rise strictly, the last one 200.
steps=$(grep '"kind":"train"' runs/smoke/long-s1-*/metrics.jsonl | sed 's/.*"step":\([0-9]*\).*/\1/')
[ "$(echo "$steps" | sort -n | uniq | wc -l)" -eq "$(echo "$steps" | wc -l)" ] || { echo "a step was logged twice"; exit 1; }
[ "$(echo "$steps" | tail -n 1)" -eq 200 ] || { echo "the long row did not reach step 200"; exit 1; }
# A task's row that leaves threads at 0 trains with the CPUs Slurm gave the task (cpus = 1), not
# with every core of the node (Slurm binds no CPUs here: TaskPlugin=task/none).
narrow_threads=$(grep -o '"threads": *[0-9]*' runs/smoke/narrow-s1-*/manifest.json | grep -o '[0-9]*$')
[ "$narrow_threads" = 1 ] || { echo "the narrow row trained with $narrow_threads threads on a 1-CPU task ($(nproc) cores)"; exit 1; }
# The report reads a suite run by Slurm as one run locally.
"$attnlab" report runs/smoke >report.txt
for row in base narrow long; do grep -q "^$row .*done" report.txt || { echo "row $row missing from the report"; cat report.txt; exit 1; }; done
cd ..

# --- the same rows and results as the local run ----------------------------------------------
for dir in local/runs/smoke/*-s1-*/; do
  name=$(basename "$dir")
  [ -f "slurm/runs/smoke/$name/result.json" ] || { echo "row folder $name (its hash) missing from the Slurm run"; exit 1; }
  for key in steps dev_ppl bleu; do
    a=$(grep -o "\"$key\": *[^,}]*" "$dir/result.json")
    b=$(grep -o "\"$key\": *[^,}]*" "slurm/runs/smoke/$name/result.json")
    [ "$a" = "$b" ] || { echo "$name: $a locally, $b on Slurm"; exit 1; }
  done
done

# --- one row data parallel on two tasks of a job step ------------------------------------------
"$attnlab" version | grep -q "MPI built" || { echo "this attnlab has no MPI: the srun part cannot run"; exit 1; }
tiny_experiment dp experiment.threads=1 training.max_steps=40 training.eval_every=40 training.accumulate=2 >acc2.toml
tiny_experiment dp experiment.threads=1 training.max_steps=40 training.eval_every=40 training.accumulate=1 >ranks2.toml
"$attnlab" train acc2.toml --run-dir acc2 >acc2.log 2>&1 || { cat acc2.log; exit 1; }
srun --mpi=pmix -n 2 "$attnlab" train ranks2.toml --run-dir srun2 >srun2.log 2>&1 || { cat srun2.log; exit 1; }
grep -q "data parallel: MPI (Open MPI" srun2.log || { echo "srun did not train data parallel"; cat srun2.log; exit 1; }
"$checkpoint_diff" acc2/checkpoints/step-00000040.safetensors srun2/checkpoints/step-00000040.safetensors ||
  { echo "srun -n 2 differs from accumulate = 2"; exit 1; }
echo "Slurm array: every row as in a local run, the cancelled row resumed, nothing ran twice; srun -n 2 equals accumulate = 2"
