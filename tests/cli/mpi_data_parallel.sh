#!/usr/bin/env bash
# Data-parallel training under the real OpenMPI launcher:
#  0. `mpirun -np 1 attnlab train` (one rank, through MPI's gradient sums) ends with exactly the
#     weights and losses of the same experiment trained without a launcher (the CPU twin of
#     bench/gpu_checks.sh's mpi phase, where the one rank's sums go through NCCL);
#  1. `mpirun -np 2 attnlab train` (accumulate 1) ends with exactly the weights, Adam moments and
#     losses of one process with accumulate = 2 on the same data (dropout on);
#  2. kill -9 of rank 1 in the middle of a data-parallel run ends the job; `mpirun` again resumes
#     it from the last checkpoint and ends with the same weights as the uninterrupted runs.
# usage: mpi_data_parallel.sh ATTNLAB_PROGRAM CHECKPOINT_DIFF MPIRUN
source "$(dirname "$0")/scratch.sh"
checkpoint_diff=$2
mpirun=$3
# Root in CI; one-core slots on a small machine; no cross-memory attach in containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=("$mpirun" -np 2 --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
common=(experiment.threads=1 model.dropout=0.1 training.max_steps=120 training.log_every=1 training.eval_every=60
        training.checkpoint_every=4 training.keep_checkpoints=10)
tiny_experiment single "${common[@]}" training.accumulate=2 >single.toml
tiny_experiment parallel "${common[@]}" training.accumulate=1 >parallel.toml

"$attnlab" train single.toml --run-dir single >single.log 2>&1 || { cat single.log; exit 1; }
# 0. One rank under mpirun against no launcher at all.
"$attnlab" train parallel.toml --run-dir plain >plain.log 2>&1 || { cat plain.log; exit 1; }
"$mpirun" -np 1 --bind-to none --mca btl self,vader "$attnlab" train parallel.toml --run-dir one >one.log 2>&1 ||
  { cat one.log; exit 1; }
grep -q "data parallel: MPI (Open MPI .*), 1 rank; a step is 1 rank x 1 batch" one.log ||
  { echo "no one-rank data-parallel line"; cat one.log; exit 1; }
diff <(train_losses plain) <(train_losses one) || { echo "losses differ between one rank under mpirun and no launcher"; exit 1; }
"$checkpoint_diff" plain/checkpoints/step-00000120.safetensors one/checkpoints/step-00000120.safetensors ||
  { echo "one rank under mpirun differs from no launcher"; exit 1; }

start=$(date +%s%N)
"${mpi[@]}" "$attnlab" train parallel.toml --run-dir parallel >parallel.log 2>&1 || { cat parallel.log; exit 1; }
echo "mpirun -np 2 training: $((($(date +%s%N) - start) / 1000000)) ms"
grep -q "data parallel: MPI (Open MPI" parallel.log || { echo "no data-parallel line"; cat parallel.log; exit 1; }
grep -q "scaling efficiency" parallel.log || { echo "no scaling efficiency"; cat parallel.log; exit 1; }
[ "$(grep -c '^training parallel into' parallel.log)" -eq 1 ] || { echo "every rank printed the run"; exit 1; }

# The same losses, step by step (metrics.jsonl written by rank 0 alone).
diff <(train_losses single) <(train_losses parallel) || { echo "losses differ"; exit 1; }
[ "$(train_losses parallel | wc -l)" -eq 120 ] || { echo "expected 120 logged steps"; train_losses parallel; exit 1; }
last=checkpoints/step-00000120.safetensors
"$checkpoint_diff" single/$last parallel/$last || { echo "weights differ"; exit 1; }

# kill -9 of rank 1 after the step-8 checkpoint, then the same command again.
"${mpi[@]}" "$attnlab" train parallel.toml --run-dir resumed >killed.log 2>&1 &
launcher=$!
while [ ! -e resumed/checkpoints/step-00000008.safetensors ]; do
  kill -0 $launcher 2>/dev/null || { echo "the run ended before the kill"; cat killed.log; exit 1; }
  sleep 0.01
done
rank1=""
for pid in $(pgrep -f "train parallel.toml --run-dir resumed"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then rank1=$pid; fi
done
[ -n "$rank1" ] || { echo "rank 1 not found"; exit 1; }
kill -9 "$rank1"
set +e
wait $launcher
status=$?
set -e
[ $status -ne 0 ] || { echo "mpirun exited 0 after its rank 1 was killed"; cat killed.log; exit 1; }
[ ! -e resumed/$last ] || { echo "the killed run finished anyway"; exit 1; }
"${mpi[@]}" "$attnlab" train parallel.toml --run-dir resumed >resume.log 2>&1 || { cat resume.log; exit 1; }
grep -q "resumed from .*step-000000" resume.log || { echo "did not resume"; cat resume.log; exit 1; }
"$checkpoint_diff" single/$last resumed/$last || { echo "the resumed run's weights differ"; exit 1; }
echo "mpirun -np 2 equals accumulate = 2, and resumes after kill -9 of a rank"
