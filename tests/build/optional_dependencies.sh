#!/usr/bin/env bash
# Configure never fails on an optional dependency: oneDNN missing, its CMake package failing on a
# package of its own (what Debian's does without the OpenCL headers), a package whose library does
# not link, and protobuf missing each turn the feature off with one line naming the Debian packages
# to install, and the configure step succeeds; ATTNLAB_DNNL=ON makes the same failure an error that
# says why. flash's Hopper kernel is off in one line without CUDA, refused with ATTNLAB_CUTLASS=ON,
# and, where nvcc is installed, off in one line when ATTNLAB_CUTLASS_DIR holds no CUTLASS. Each
# case configures the whole project (CPU only unless it says, no tests) in a folder of its own.
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Every case's configure step starts at once, in the background (they are independent, and each
# spends most of its time in a probe's compiler); the checks below wait for each in turn.
declare -A pids
start() {  # NAME ARGS... -> $work/NAME.log, $work/NAME.status
  local name=$1
  shift
  { cmake -S "$source_dir" -B "$work/$name" -G Ninja -DATTNLAB_CUDA=OFF -DATTNLAB_BUILD_TESTS=OFF \
      -DATTNLAB_BUILD_BENCH=OFF "$@" >"$work/$name.log" 2>&1 && echo 0 >"$work/$name.status" ||
      echo $? >"$work/$name.status"; } &
  pids[$name]=$!
}
configure() {  # NAME -> $status of its configure step, once it has ended
  wait "${pids[$1]}" || true
  status=$(cat "$work/$1.status")
}
expect_off() {  # NAME FEATURE-PATTERN REASON-PATTERN
  local name=$1 feature=$2 reason=$3 lines
  [[ $status -eq 0 ]] || { cat "$work/$name.log"; fail "$name: configure failed"; }
  lines=$(grep -cE "attnlab: $feature off: " "$work/$name.log" || true)
  [[ $lines -eq 1 ]] || { cat "$work/$name.log"; fail "$name: expected one line '$feature off', found $lines"; }
  grep -E "attnlab: $feature off: " "$work/$name.log" | grep -Eq "$reason" ||
    { grep -E "attnlab: $feature off: " "$work/$name.log"; fail "$name: the line does not say '$reason'"; }
  echo "$name: $(grep -Eo "attnlab: $feature off: .*" "$work/$name.log")"
}
dnnl_feature="oneDNN \(host f32 and bf16 GEMMs; without it f32 runs on OpenBLAS and bf16 widens to f32\)"
dnnl_packages="\(install libdnnl-dev ocl-icd-opencl-dev\)$"

# The broken packages of cases 2, 3 and 5: a package file that fails on a dependency of its own,
# and one whose library is not there (it loads, and the probe's program does not link).
mkdir -p "$work/fake-failing/dnnl"
cat >"$work/fake-failing/dnnl/dnnl-config.cmake" <<'CMAKE'
find_package(AttnlabTestAbsentDependency REQUIRED)
CMAKE
mkdir -p "$work/fake-unlinkable/dnnl"
cat >"$work/fake-unlinkable/dnnl/dnnl-config.cmake" <<CMAKE
add_library(DNNL::dnnl SHARED IMPORTED)
set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION $work/no-such-lib/libdnnl.so)
CMAKE
have_debian_dnnl=0
[[ -f /usr/lib/x86_64-linux-gnu/cmake/dnnl/dnnl-config.cmake ]] && have_debian_dnnl=1
have_nvcc=0
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then have_nvcc=1; fi
start missing -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON
start failing -Ddnnl_DIR="$work/fake-failing/dnnl"
start unlinkable -Ddnnl_DIR="$work/fake-unlinkable/dnnl"
((have_debian_dnnl)) && start no-opencl -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON
start required -DATTNLAB_DNNL=ON -Ddnnl_DIR="$work/fake-failing/dnnl"
start no-protobuf -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON
start no-cuda-no-cutlass
start cutlass-required -DATTNLAB_CUTLASS=ON
((have_nvcc)) && start no-cutlass -DATTNLAB_CUDA=AUTO -DATTNLAB_CUTLASS_DIR="$work/no-cutlass-here"

# 1. Missing.
configure missing
expect_off missing "$dnnl_feature" "CMAKE_DISABLE_FIND_PACKAGE_dnnl is set $dnnl_packages"

# 2. A package file that fails on a dependency of its own.
configure failing
expect_off failing "$dnnl_feature" "AttnlabTestAbsentDependency.*$dnnl_packages"

# 3. A package whose library is not there: it loads, and the probe's program does not link.
configure unlinkable
expect_off unlinkable "$dnnl_feature" "(libdnnl|oneapi/dnnl).*$dnnl_packages"

# 4. Debian's own package without the OpenCL it asks for (where libdnnl-dev is installed).
if ((have_debian_dnnl)); then
  configure no-opencl
  expect_off no-opencl "$dnnl_feature" "OpenCL.*$dnnl_packages"
fi

# 5. Required, and broken: an error that says why.
configure required
[[ $status -ne 0 ]] || fail "required: ATTNLAB_DNNL=ON with a broken oneDNN configured"
tr -s ' \n' ' ' <"$work/required.log" | grep -Eq "ATTNLAB_DNNL=ON but $dnnl_feature cannot be built: .*AttnlabTestAbsentDependency" ||
  { cat "$work/required.log"; fail "required: the error does not name the feature and the reason"; }
echo "required: configure refused, naming the feature and the reason"

# 6. protobuf missing: no TensorBoard event files, the rest configures.
configure no-protobuf
expect_off no-protobuf "TensorBoard event files \(metrics.jsonl is written either way\)" \
  "\(install libprotobuf-dev protobuf-compiler\)$"

# 7. flash's Hopper kernel: off without CUDA, an error when required there, off without CUTLASS.
cutlass_feature="flash's Hopper kernel \(sm_90a warpgroup MMA\)"
configure no-cuda-no-cutlass
expect_off no-cuda-no-cutlass "$cutlass_feature" "the CUDA backend is off"
configure cutlass-required
[[ $status -ne 0 ]] || fail "cutlass-required: ATTNLAB_CUTLASS=ON without CUDA configured"
tr -s ' \n' ' ' <"$work/cutlass-required.log" |
  grep -Eq "ATTNLAB_CUTLASS=ON but $cutlass_feature cannot be built: the CUDA backend is off" ||
  { cat "$work/cutlass-required.log"; fail "cutlass-required: the error does not name the feature and the reason"; }
echo "cutlass-required: configure refused, naming the feature and the reason"
if ((have_nvcc)); then
  configure no-cutlass
  expect_off no-cutlass "$cutlass_feature" "no CUTLASS in $work/no-cutlass-here \(install NVIDIA CUTLASS 4.7.0"
fi

echo "optional dependencies: every missing or broken one turned its feature off in one line"
