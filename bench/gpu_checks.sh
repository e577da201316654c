#!/usr/bin/env bash
# Every check and measurement a GPU machine owes the project, one phase after another, each under
# its own time limit so that one hang or crash costs only its phase, each writing its log into OUT:
#
#   info       date, GPU, driver, kernel, glibc, torch; the pack's check.sh, attnlab version, plugins
#   tests      test_cuda in full (every op against the CPU, the training step CPU vs GPU, the loss
#              curves in fp32 / tf32 / bf16, the caching allocator, the cudnn graphs)
#   plugins    attnlab plugins --check for flash and cudnn on cuda:0 against scaled_dot, then for
#              every positional, dropout, feed-forward and norm plugin on cuda:0
#   train      the base row of experiments/table3-multi30k.toml on cuda:0 (bf16), then eval --test,
#              the report (Markdown, CSV) and the row's metrics.jsonl, packed as OUT/train.tgz
#   profile    bench_train_step of the base model (bf16, 25000 tokens) with ATTNLAB_PROFILE=1: the
#              time of each op of the forward and the backward
#   logits     bench_train_step of the base and the Multi30k model (bf16) with bf16 logits and with
#              f32 ones (ATTNLAB_NO_BF16_LOGITS=1), alternating twice: ms/step and peak memory
#   waits      the host waits of a training step (multi30k and base model, bf16): per phase, then the
#              call stack of each wait of one step in OUT/host_waits.log
#   compare    bench/gpu_compare.sh: base model, bf16, 25000-token batches, attnlab vs PyTorch eager
#              vs torch.compile
#   small      bench/gpu_compare.sh: the Multi30k row's model (6 + 6 layers of width 128, d_ff 512),
#              bf16, 4096-token batches, attnlab vs PyTorch eager vs torch.compile in its default
#              mode and with CUDA graphs (reduce-overhead)
#   attention  bench/attention_compare.sh: scaled_dot, flash, cudnn and torch SDPA
#   positions  bench_attention for flash and scaled_dot (bf16, d 64) without positions, with alibi
#              and with relative: the position terms inside flash's kernels against both
#   exprs      score expressions on cuda:0: test_cuda's expression cases (NVRTC's kernels against the
#              CPU; on an sm_90 GPU once more with ATTNLAB_FLASH_SM90=1, the Hopper kernels), then
#              bench_attention for flash (f32 and bf16, d 64, T 512-4096) without an expression,
#              with ALiBi built in and as an expression, the plain score, soft-capping and a window
#              with a sink: the expressions' cost against the built-in kernels (goal within 1.25x)
#              and the tiles the window skips; bf16 again on the Hopper kernels on sm_90
#   checks     tests and plugins at the same time (test_cuda's output in OUT/tests.log)
#   rows       further rows of the Multi30k suite (ROWS, --jobs JOBS on the one GPU), appended
#              to OUT/train.tgz
#   fused      bench_fused on cuda:0: the fused ops against the unfused ones (OUT/fused.json)
#   oom        the quickstart on cuda:0 interrupted after a checkpoint, resumed under a memory limit
#              it cannot train in: the out-of-memory error, and the checkpoints unchanged
#   mpi        the tiny experiment of the CLI tests on MPI_DEVICE (cuda:0) trained plainly, then by
#              the packed `mpirun -np 1` (its gradient sums through NCCL): the same losses and
#              weights, bit for bit
#   curves     the Multi30k base row with ALiBi trained twice on CURVES_DEVICE (cuda:0; both at
#              once): with scaled_dot, then with flash (no fallback); flash's curve of training
#              losses must follow scaled_dot's as the bf16 curve tests ask (tests/nmt/copy_task.h);
#              CURVES_STEPS trains fewer steps; the run folders without checkpoints as curves.tgz
#   sm90       flash's Hopper kernels, forward and backward (ATTNLAB_FLASH_SM90=1 in this phase
#              only): their warpgroup MMA in the plugin's SASS (HGMMA), the line of `attnlab
#              plugins`, test_cuda's flash cases, compute-sanitizer's memcheck and racecheck on
#              their bf16 cases, flash's conformance kit on cuda:0 against scaled_dot, the attention
#              table against torch SDPA (flash with its sm_80 and its Hopper kernels, cudnn), and
#              flash with ALiBi and relative positions
#   shapes     static batch shapes (training.pad_to_multiple 8) against a shape per batch: the
#              Multi30k recipe's model (experiments/multi30k.toml) in bf16 on cuda:0, SHAPES_STEPS
#              (300) steps each way, alternating twice; `attnlab data shapes` first (shapes, padding)
#   recipe     experiments/multi30k.toml, the CPU's recipe unchanged (fp32, 10000 steps), trained
#              on RECIPE_DEVICE (cuda:0), then eval on dev and --test; its run folder without
#              checkpoints packed as OUT/recipe.tgz (RECIPE_STEPS trains fewer steps)
#
#   bench/gpu_checks.sh OUT [PHASE...]          # default: info tests plugins train compare attention
#
# Run from the repository root on the GPU machine, with the folder of scripts/pack-gpu.sh at PACK
# (default dist/attnlab-gpu) and the shared data folder at ATTNLAB_SHARED (the Multi30k files).
# TEST_FILES: the test sources whose cases run (default: all of tests/cuda).
# Time limits (seconds): T_TESTS (per test source file), T_PROFILE, T_WAITS (per command), T_PLUGINS,
# T_TRAIN, T_EVAL, T_LOGITS (per run), T_COMPARE, T_SMALL, T_ATTENTION, T_POSITIONS (per scheme),
# T_ROWS, T_RECIPE, T_SHAPES (per run), T_OOM, T_FUSED, T_MPI (per run), T_CURVES, T_SM90 (per
# command of the sm90 phase),
# T_KIT (per plugin library of the plugins phase after the attention ones; CHECK_OTHERS: those
# libraries, default all of them).
# Writes into OUT: summary.log (everything printed), report.md and report.csv (the suite's report),
# train.tgz (the suite's run folder without checkpoints), compile.log (torch.compile's messages).
set -uo pipefail
out=${1:?usage: bench/gpu_checks.sh OUT [PHASE...]}
shift
phases=("$@")
((${#phases[@]})) || phases=(info tests plugins train compare attention)
root=$(pwd)
pack=$(realpath "${PACK:-dist/attnlab-gpu}")
run=("$pack/run.sh")
plugins=$pack/lib/attnlab/plugins
suite=experiments/table3-multi30k.toml
mkdir -p "$out"
exec > >(tee -a "$out/summary.log") 2>&1

stamp() { echo "=== $(date -u +%H:%M:%S) $*"; }
# limited SECONDS COMMAND...: the command under a time limit, with its exit status and time.
limited() {
  local limit=$1
  shift
  local t0=$SECONDS rc=0
  timeout -k 10 "$limit" "$@" || rc=$?
  echo "--- exit $rc after $((SECONDS - t0)) s$( ((rc == 124)) && echo " (time limit $limit s)")"
  return "$rc"
}

phase_info() {
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  uname -r
  ldd --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  nproc
  "$pack/check.sh"
  "${run[@]}" attnlab version
  "${run[@]}" attnlab plugins
}

# test_cuda one source file at a time, so that a crash hides only its own file's tests.
phase_tests() {
  local f
  for f in ${TEST_FILES:-tests/cuda/*.cpp tests/cuda/*/*.cpp}; do
    stamp "test_cuda: $f"
    limited "${T_TESTS:-90}" "${run[@]}" test_cuda --source-file="*${f#tests/}" --duration=true
  done
}

phase_plugins() {
  local p lib
  for p in ${CHECK_PLUGINS:-flash cudnn}; do
    stamp "plugins --check $p"
    limited "${T_PLUGINS:-90}" "${run[@]}" attnlab plugins --check "$plugins/attnlab_attention_$p.so" \
      --device cuda:0 --reference scaled_dot
  done
  # Every positional, dropout, feed-forward and norm plugin's conformance kit on cuda:0, one line each.
  local libs=("$plugins"/attnlab_{positional,dropout,ffn,norm}_*.so)
  [[ -n ${CHECK_OTHERS+set} ]] && read -ra libs <<<"$CHECK_OTHERS"
  for lib in "${libs[@]}"; do
    stamp "plugins --check $(basename "$lib")"
    limited "${T_KIT:-60}" "${run[@]}" attnlab plugins --check "$lib" --device cuda:0 | grep -v '^  \[pass\]'
  done
}

# pack_runs [DIR] [ARCHIVE]: a run folder without checkpoints (result.json, metrics.jsonl, eval
# records, logs) as OUT/ARCHIVE; by default the suite's, as train.tgz.
pack_runs() {
  local dir=${1:-runs/table3-multi30k}
  [[ -d $dir ]] || return 0
  tar czf "$out/${2:-train.tgz}" --exclude='*.safetensors' --exclude='.cache' --exclude='*.model' "$dir"
}

report() {
  local f
  for f in markdown csv; do
    "${run[@]}" attnlab report runs/table3-multi30k --format "$f" --output "$out/report.${f/markdown/md}" ||
      echo "report --format $f failed"
  done
  cat "$out/report.md" 2>/dev/null
}

phase_train() {
  export ATTNLAB_SHARED=${ATTNLAB_SHARED:-$root/../shared}
  limited "${T_TRAIN:-240}" "${run[@]}" attnlab run "$suite" --rows base --devices cuda:0
  local row
  row=$(dirname "$(find runs/table3-multi30k -path '*base*' -name metrics.jsonl | head -1)")
  if [[ -d $row ]]; then
    stamp "eval --test $row"
    limited "${T_EVAL:-120}" "${run[@]}" attnlab eval "$row" --test --device cuda:0
  fi
  report
  pack_runs
}

phase_rows() {
  export ATTNLAB_SHARED=${ATTNLAB_SHARED:-$root/../shared}
  limited "${T_ROWS:-300}" "${run[@]}" attnlab run "$suite" --rows "${ROWS:-A1,A2,C1,C2,C6,C7,D1,D3}" \
    --jobs "${JOBS:-4}" --devices cuda:0 --quiet
  report
  pack_runs
}

# multi30k_toml OUT [SED_EXPRESSION...]: experiments/multi30k.toml with its data paths pointed at
# ATTNLAB_SHARED (the file names the shared folder beside the repository, which the GPU machine
# may keep elsewhere) and the further sed expressions applied, written to OUT.
multi30k_toml() {
  local out=$1 shared=${ATTNLAB_SHARED:-$root/../shared}
  shift
  sed -e "s|\"\.\./\.\./shared/|\"$(realpath "$shared")/|" "$@" experiments/multi30k.toml >"$out"
}

# The CPU recipe on the GPU: the same file (multi30k_toml). The run is resumable: a second call of
# the phase continues it.
phase_recipe() {
  local dir=runs/multi30k-recipe-gpu device=${RECIPE_DEVICE:-cuda:0}
  local toml=experiments/.multi30k-recipe-gpu.toml
  multi30k_toml "$toml"
  limited "${T_RECIPE:-480}" "${run[@]}" attnlab train "$toml" --device "$device" --run-dir "$dir" \
    ${RECIPE_STEPS:+--steps "$RECIPE_STEPS"}
  if [[ -d $dir/checkpoints ]]; then
    stamp "eval $dir (dev, then --test)"
    limited "${T_EVAL:-120}" "${run[@]}" attnlab eval "$dir" --device "$device"
    limited "${T_EVAL:-120}" "${run[@]}" attnlab eval "$dir" --test --device "$device"
    pack_runs "$dir" recipe.tgz
  fi
  rm -f "$toml"
}

# Static batch shapes against a shape per batch, back to back: the training log's tokens/s (real
# target tokens) and its last step times. Fewer shapes let cuDNN's attention graphs and cuBLAS's
# plans be reused; the padding costs work. Run folders are fresh each time and removed after.
phase_shapes() {
  local round m dir
  for m in 0 8; do
    multi30k_toml "experiments/.shapes-$m.toml" \
      -e "s|^\[training\]|[training]\npad_to_multiple = $m\nprecision = \"bf16\"|"
  done
  limited "${T_SHAPES:-120}" "${run[@]}" attnlab data shapes experiments/.shapes-8.toml
  for round in 1 2; do
    for m in 0 8; do
      dir=runs/shapes-$m-$round
      rm -rf "$dir"
      stamp "pad_to_multiple $m, round $round"
      limited "${T_SHAPES:-120}" "${run[@]}" attnlab train "experiments/.shapes-$m.toml" --device cuda:0 \
        --run-dir "$dir" --steps "${SHAPES_STEPS:-300}" 2>&1 | grep -E 'tokens/s|step +[0-9]+' | tail -n 4
      rm -rf "$dir"
    done
  done
  rm -f experiments/.shapes-0.toml experiments/.shapes-8.toml
}

# The base model's bf16 training step with every op timed alone (ATTNLAB_PROFILE=1): where the
# time of the forward and the backward goes.
phase_profile() {
  (
    export ATTNLAB_PROFILE=1
    limited "${T_PROFILE:-120}" "${run[@]}" bench_train_step --model base --device cuda:0 --precision bf16 \
      --batch-tokens 25000 --warmup 2 --steps 3
  )
}

# Where a training step makes the host wait for the GPU: the counts per step and phase, then one
# step traced (ATTNLAB_TRACE_HOST_WAITS=1), its call stacks demangled into OUT/host_waits.log. The
# traced step's log also holds the bench's own four waits between its phases.
phase_waits() {
  local model
  for model in multi30k base; do
    limited "${T_WAITS:-90}" "${run[@]}" bench_train_step --model "$model" --device cuda:0 --precision bf16 \
      --batch-tokens "$([[ $model == base ]] && echo 25000 || echo 4096)" --warmup 2 --steps 5
  done
  local demangle=(cat)
  command -v c++filt >/dev/null && demangle=(c++filt)
  (
    export ATTNLAB_TRACE_HOST_WAITS=1
    limited "${T_WAITS:-90}" "${run[@]}" bench_train_step --model multi30k --device cuda:0 --precision bf16 \
      --batch-tokens 4096 --warmup 0 --steps 1
  ) 2>&1 | "${demangle[@]}" >"$out/host_waits.log"
  grep -c '^host wait' "$out/host_waits.log"
}

# bf16 logits against f32 logits, measured back to back in one phase: the step's widest tensor in
# half the bytes (docs/architecture.md, Compute precision).
phase_logits() {
  local model round f32
  for model in base multi30k; do
    for round in 1 2; do
      for f32 in 0 1; do
        ATTNLAB_NO_BF16_LOGITS=$f32 limited "${T_LOGITS:-60}" "${run[@]}" bench_train_step --model "$model" \
          --device cuda:0 --precision bf16 --batch-tokens "$([[ $model == base ]] && echo 25000 || echo 4096)" \
          --warmup 2 --steps 5
      done
    done
  done
}

phase_compare() {
  export COMPILE_LOG=$out/compile.log
  limited "${T_COMPARE:-300}" bash "$pack/bench/gpu_compare.sh"
}

# #28's small model: launches and host waits are its cost, so torch.compile's CUDA graphs are the
# bar. More steps than the base model's comparison: a step takes milliseconds.
phase_small() {
  export COMPILE_LOG=$out/compile-small.log
  MODELS=multi30k BATCH_TOKENS=4096 WARMUP=${SMALL_WARMUP:-5} STEPS=${SMALL_STEPS:-50} \
    COMPILE_MODES="default reduce-overhead" limited "${T_SMALL:-300}" bash "$pack/bench/gpu_compare.sh"
}

phase_attention() {
  limited "${T_ATTENTION:-150}" bash "$pack/bench/attention_compare.sh"
}

phase_positions() {
  local scheme
  for scheme in none alibi relative; do
    limited "${T_POSITIONS:-120}" "${run[@]}" bench_attention --device cuda:0 --plugins flash,scaled_dot --dims 64 \
      --min-len 512 --max-len 4096 $([ "$scheme" = none ] || echo "--positional $scheme")
  done
}

phase_exprs() {
  limited "${T_TESTS:-600}" "${run[@]}" test_cuda --test-case='*expression*'
  local hopper=0 dtype extra
  [ "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2>/dev/null)" = "9.0" ] && hopper=1
  if [ "$hopper" = 1 ]; then
    echo "== the same on the Hopper kernels (ATTNLAB_FLASH_SM90=1)"
    ATTNLAB_FLASH_SM90=1 limited "${T_TESTS:-600}" "${run[@]}" test_cuda --test-case='*expression*'
  fi
  for dtype in f32 bf16; do
    for extra in "" "--positional alibi" "--expr alibi" "--expr score" "--expr softcap" "--expr window"; do
      # shellcheck disable=SC2086  # extra is a list of options
      limited "${T_POSITIONS:-120}" "${run[@]}" bench_attention --device cuda:0 --plugins flash --dims 64 \
        --dtype "$dtype" --min-len 512 --max-len 4096 $extra
      if [ "$hopper" = 1 ] && [ "$dtype" = bf16 ]; then
        # shellcheck disable=SC2086
        ATTNLAB_FLASH_SM90=1 limited "${T_POSITIONS:-120}" "${run[@]}" bench_attention --device cuda:0 --plugins flash \
          --dims 64 --dtype bf16 --min-len 512 --max-len 4096 $extra
      fi
    done
  done
}

# checks: tests and plugins at the same time (both only compare results), test_cuda's output in
# OUT/tests.log.
# The fused ops against the unfused ones on cuda:0 (bench/README.md, "bench_fused"), as a table
# and as OUT/fused.json.
phase_fused() {
  limited "${T_FUSED:-180}" "${run[@]}" bench_fused --device=cuda --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="$out/fused.json" --benchmark_out_format=json
}

# A batch that does not fit, with a checkpoint behind it: the quickstart on OOM_DEVICE (cuda:0)
# interrupted (SIGINT) once its step-200 checkpoint exists, then resumed under
# ATTNLAB_CUDA_MEMORY_LIMIT=OOM_LIMIT (32MiB): the run must stop with the out-of-memory error that
# names the limit and what to lower, leave its checkpoints byte for byte as they were, and one of
# them must still evaluate without the limit.
phase_oom() {
  local dir=runs/oom-check device=${OOM_DEVICE:-cuda:0} pid t0=$SECONDS
  rm -rf "$dir"
  "${run[@]}" attnlab train experiments/quickstart.toml --device "$device" --run-dir "$dir" >"$out/oom-train.log" 2>&1 &
  pid=$!
  while [[ ! -e $dir/checkpoints/step-00000200.safetensors ]] && kill -0 "$pid" 2>/dev/null &&
    ((SECONDS - t0 < ${T_OOM:-120})); do sleep 0.2; done
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  echo "--- first run: exit $? after $((SECONDS - t0)) s; checkpoints: $(ls "$dir/checkpoints" 2>/dev/null | tr '\n' ' ')"
  local before
  before=$(sha256sum "$dir"/checkpoints/*.safetensors 2>/dev/null)
  stamp "resumed under ATTNLAB_CUDA_MEMORY_LIMIT=${OOM_LIMIT:-32MiB}"
  limited "${T_OOM:-120}" env ATTNLAB_CUDA_MEMORY_LIMIT="${OOM_LIMIT:-32MiB}" "${run[@]}" attnlab train \
    experiments/quickstart.toml --device "$device" --run-dir "$dir" >"$out/oom.log" 2>&1
  tail -n 3 "$out/oom.log"
  if grep -q "out of memory" "$out/oom.log" && grep -q "ATTNLAB_CUDA_MEMORY_LIMIT" "$out/oom.log" &&
    grep -q "Lower training.batch_tokens" "$out/oom.log"; then
    echo "PASS: the run stopped with the out-of-memory error naming the limit and what to lower"
  else
    echo "FAIL: no out-of-memory error naming the limit in $out/oom.log"
  fi
  if [[ -n $before && "$(sha256sum "$dir"/checkpoints/*.safetensors 2>/dev/null)" == "$before" ]]; then
    echo "PASS: the checkpoints are byte for byte as before"
  else
    echo "FAIL: the checkpoints changed or none existed"
  fi
  limited "${T_EVAL:-120}" "${run[@]}" attnlab eval "$dir" --device "$device"
}

# One rank launched by mpirun trains exactly as no launcher does: on CUDA its gradient sums go
# through NCCL (libnccl.so.2 from the machine or PyTorch's nvidia-nccl wheel, env.sh), whose sum
# over one rank must hand every gradient back unchanged. Losses and the last checkpoint compared.
phase_mpi() {
  local device=${MPI_DEVICE:-cuda:0} dir logs
  logs=$(realpath "$out")
  dir=$(realpath -m runs/mpi-check)
  rm -rf "$dir"
  mkdir -p "$dir"
  [[ -x $pack/openmpi/bin/mpirun ]] ||
    { echo "FAIL: the pack holds no mpirun (attnlab built without MPI?)"; return; }
  source tests/cli/tiny_experiment.sh
  tiny_experiment mpi-check "experiment.device=\"$device\"" model.dropout=0.1 training.max_steps=60 \
    training.log_every=1 training.eval_every=60 training.checkpoint_every=20 >"$dir/exp.toml"
  (
    cd "$dir" || exit 1
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    limited "${T_MPI:-120}" "${run[@]}" attnlab train exp.toml --run-dir plain >"$logs/mpi-plain.log" 2>&1
    limited "${T_MPI:-120}" "${run[@]}" mpirun -np 1 --bind-to none --mca btl self,vader "$pack/bin/attnlab" \
      train exp.toml --run-dir one >"$logs/mpi-one.log" 2>&1
  )
  tail -n 2 "$logs/mpi-plain.log" "$logs/mpi-one.log"
  local line
  line=$(grep "data parallel:" "$logs/mpi-one.log")
  echo "$line"
  if [[ $device == cuda* && $line != *NCCL* ]] || [[ -z $line ]]; then
    echo "FAIL: mpirun -np 1 did not train through $([[ $device == cuda* ]] && echo NCCL || echo MPI)"
  fi
  if [[ -s $dir/plain/metrics.jsonl ]] && diff <(train_losses "$dir/plain") <(train_losses "$dir/one") >/dev/null; then
    echo "PASS: the same $(train_losses "$dir/plain" | wc -l) losses"
  else
    echo "FAIL: the losses differ (or a run did not train)"
  fi
  local last=checkpoints/step-00000060.safetensors
  if "${run[@]}" checkpoint_diff "$dir/plain/$last" "$dir/one/$last"; then
    echo "PASS: the same weights at step 60, bit for bit"
  else
    echo "FAIL: the weights differ at step 60 (or a checkpoint is missing)"
  fi
}

# curves_follow REF_RUN GOT_RUN: GOT's logged training losses follow REF's by the rule of the
# loss-curve tests (tests/nmt/copy_task.h): the same steps, the first within 1 %, every window of
# 10 within 0.1 nats plus 10 % of REF's mean. Prints each window that misses; status 1 if one does.
curves_follow() {
  awk 'NR == FNR { ref[++n] = $2; step[n] = $1; next }
       { got[++m] = $2; if (step[m] != $1) bad_steps = 1 }
       END {
         if (n == 0 || n != m || bad_steps) { printf "FAIL: %d and %d logged losses at other steps\n", n, m; exit 1 }
         d = got[1] - ref[1]; if (d < 0) d = -d
         bad = d > 0.01 * ref[1]
         printf "first logged loss %.4f against %.4f%s\n", got[1], ref[1], bad ? " (more than 1 % apart)" : ""
         for (w = 1; w <= n; w += 10) {
           a = 0; b = 0; c = 0
           for (i = w; i < w + 10 && i <= n; i++) { a += ref[i]; b += got[i]; c++ }
           a /= c; b /= c; d = b - a; if (d < 0) d = -d
           u = d / (0.1 + 0.1 * a); if (u > used) used = u
           if (u > 1) { bad = 1; printf "window from step %d: %.4f against %.4f\n", step[w], b, a }
         }
         printf "%d logged losses; the closest window takes %.3f of its allowance\n", n, used
         exit bad
       }' <(train_losses "$1") <(train_losses "$2")
}

# flash's training check: flash + alibi against scaled_dot + alibi on the Multi30k base row, from a
# copy of the suite with two rows of its own (its own suite name, so its own run folders), the
# fallback removed (a row flash cannot serve is refused, not quietly run by scaled_dot) and the
# losses logged every 10 steps.
phase_curves() {
  export ATTNLAB_SHARED=${ATTNLAB_SHARED:-$root/../shared}
  local toml=experiments/.flash-alibi-multi30k.toml dir=runs/flash-alibi-multi30k
  sed -e 's/^name = "table3-multi30k"$/name = "flash-alibi-multi30k"/' -e '/^fallback = "scaled_dot"$/d' \
    -e "s/^max_steps = 4000$/max_steps = ${CURVES_STEPS:-4000}/" -e 's/^log_every = 50$/log_every = 10/' \
    -e '/^\[rows\./,$d' "$suite" >"$toml"
  printf '%s\n' '[rows.alibi]' '"model.positional.name" = "alibi"' '' '[rows.alibi-flash]' \
    '"model.positional.name" = "alibi"' '"model.attention.name" = "flash"' >>"$toml"
  source tests/cli/tiny_experiment.sh
  limited "${T_CURVES:-300}" "${run[@]}" attnlab run "$toml" --rows alibi,alibi-flash --jobs 2 \
    --devices "${CURVES_DEVICE:-cuda:0}" --quiet
  local ref got
  ref=$(dirname "$(find "$dir" -path "$dir/alibi-s1-*/metrics.jsonl")")
  got=$(dirname "$(find "$dir" -path "$dir/alibi-flash-s1-*/metrics.jsonl")")
  awk 'NR == FNR { ref[$1] = $2; next }
       $1 in ref { printf "dev perplexity at step %s: scaled_dot %.3f, flash %.3f\n", $1, ref[$1], $2 }' \
    <(dev_perplexities "$ref") <(dev_perplexities "$got")
  if curves_follow "$ref" "$got"; then echo "PASS: flash + alibi follows scaled_dot + alibi"
  else echo "FAIL: flash + alibi leaves scaled_dot + alibi's curve (or a row did not train)"; fi
  pack_runs "$dir" curves.tgz
}

phase_sm90() {
  stamp "warpgroup MMA (HGMMA) in flash's plugin"
  cuobjdump --dump-sass "$plugins/attnlab_attention_flash.so" | grep -o 'HGMMA\.[0-9A-Za-z.]*' | sort | uniq -c
  (
    export ATTNLAB_FLASH_SM90=1
    "${run[@]}" attnlab plugins | grep -o "[^;]*Hopper[^;]*"
    T_TESTS=${T_SM90:-120} TEST_FILES=tests/cuda/test_cuda_flash.cpp phase_tests
    # Out-of-bounds accesses and shared-memory races of the new kernels (where compute-sanitizer
    # runs: not under gVisor).
    local tool
    for tool in memcheck racecheck; do
      stamp "compute-sanitizer --tool $tool, flash's bf16 cases over several 128-row tiles"
      limited "${T_SM90:-120}" compute-sanitizer --tool "$tool" --print-limit 20 "${run[@]}" test_cuda \
        --test-case="*across several 128 row tiles*"
    done
    T_PLUGINS=${T_SM90:-120} CHECK_PLUGINS=flash CHECK_OTHERS="" phase_plugins
    ATTNLAB_FLASH_SM90=0 SM90=1 PLUGINS=flash,cudnn limited "${T_SM90:-150}" bash "$pack/bench/attention_compare.sh"
    local scheme
    for scheme in alibi relative; do
      limited "${T_SM90:-120}" "${run[@]}" bench_attention --device cuda:0 --plugins flash,scaled_dot --dims 64 \
        --min-len 512 --max-len 4096 --positional "$scheme"
    done
  )
}

phase_checks() {
  phase_tests >"$out/tests.log" 2>&1 &
  local pid=$!
  phase_plugins
  wait "$pid"
  tail -n 40 "$out/tests.log"
}

for p in "${phases[@]}"; do
  stamp "phase $p"
  "phase_$p"
done
stamp "done"
