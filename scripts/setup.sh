#!/usr/bin/env bash
# Installs attnlab's build dependencies from Debian packages (Debian 12 "bookworm").
# Safe to run again: packages already present are not reinstalled.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  ccache                       # compiler cache: a second build of the same sources, in any clone, is quick
  libfmt-dev doctest-dev libbenchmark-dev
  libopenblas-openmp-dev
  libdnnl-dev                  # GEMMs on the host: oneDNN sgemm (f32), matmul (bf16, AVX512_BF16)
  ocl-icd-opencl-dev           # OpenCL headers: Debian's oneDNN CMake package requires them
  libboost-dev
  libtomlplusplus-dev
  libsentencepiece-dev sentencepiece
  libxxhash-dev zlib1g-dev nlohmann-json3-dev libcli11-dev
  libpcre2-dev
  libprotobuf-dev protobuf-compiler python3-protobuf  # TensorBoard event files (and their read-back test)
  libopenmpi-dev openmpi-bin   # data-parallel training (mpirun, srun)
  slurm-wlm munge              # suites as Slurm job arrays; the tests start a one-node cluster
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: CUDA compiler found: the CUDA backend will be compiled"
else
  echo "setup: no CUDA compiler: building the CPU backend only"
fi
