#!/usr/bin/env bash
# A full disk (injected: ATTNLAB_FAULT_WRITE, nmt/io/write_faults.h) while a checkpoint or a result
# is written: the command fails naming the file and the system error, the previous checkpoint is
# intact, no temporary file is left, and the run resumes to the same bytes as a run that never
# failed.
# usage: full_disk.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
tiny_experiment disk training.max_steps=60 training.eval_every=30 training.checkpoint_every=20 \
  training.keep_checkpoints=5 >exp.toml
final=checkpoints/step-00000060.safetensors

"$attnlab" train exp.toml --run-dir whole >whole.log 2>&1

# The step-40 checkpoint cannot be written (after its first 1000 bytes).
set +e
ATTNLAB_FAULT_WRITE=step-00000040:ENOSPC:1000 "$attnlab" train exp.toml --run-dir full >full.log 2>&1
rc=$?
set -e
[[ $rc -ne 0 ]] || { echo "the run did not fail on a full disk"; cat full.log; exit 1; }
grep -q "writing 'full/checkpoints/step-00000040.safetensors' failed: No space left on device (ENOSPC, errno 28)" full.log ||
  { echo "the error does not name the file and the errno:"; cat full.log; exit 1; }
[ -e full/checkpoints/step-00000020.safetensors ] || { echo "the previous checkpoint is gone"; exit 1; }
[ ! -e full/checkpoints/step-00000040.safetensors ] || { echo "a half-written checkpoint was kept"; exit 1; }
leftovers=$(find full -name '.*.tmp-*')
[ -z "$leftovers" ] || { echo "temporary files left: $leftovers"; exit 1; }
cmp full/checkpoints/step-00000020.safetensors whole/checkpoints/step-00000020.safetensors

# Space again: the run resumes from step 20 and ends with the bytes of the run that never failed.
"$attnlab" train exp.toml --run-dir full >resumed.log 2>&1
grep -q "resumed from .*step-00000020.safetensors (step 20)" resumed.log || { echo "did not resume from step 20:"; cat resumed.log; exit 1; }
cmp whole/$final full/$final
echo "checkpoint write on a full disk: named, previous checkpoint kept, resumed bit-identically"

# A result: attnlab eval's record cannot be written; the previous record stays as it was.
"$attnlab" eval whole --beam 1 >eval1.log 2>&1
record=$(sed -n "s/^recorded in //p" eval1.log)
[ -n "$record" ] && [ -e "$record" ] || { echo "no eval record:"; cat eval1.log; exit 1; }
cp "$record" record.before
name=$(basename "$record")
set +e
ATTNLAB_FAULT_WRITE=$name:EDQUOT "$attnlab" eval whole --beam 2 >eval2.log 2>&1
rc=$?
set -e
[[ $rc -ne 0 ]] || { echo "eval did not fail"; cat eval2.log; exit 1; }
grep -q "writing '.*$name' failed: Disk quota exceeded (EDQUOT, errno 122)" eval2.log ||
  { echo "the eval error does not name the file and the errno:"; cat eval2.log; exit 1; }
cmp record.before "$record"
echo "result write on a full disk: named, previous result kept"
