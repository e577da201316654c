#!/usr/bin/env bash
# Builds attnlab with CUDA on this (development) machine and packs into one folder everything a
# GPU machine needs to run the program, the training benchmark and the test suites, for a GPU
# machine that has the CUDA runtime and driver, Python with PyTorch, but none of the Debian
# packages attnlab builds against (fmt, TOML++, SentencePiece, OpenBLAS, xxhash, PCRE2, ...).
# See bench/README.md ("Running on a GPU machine").
#
#   scripts/pack-gpu.sh [--build-dir DIR] [--out DIR] [--no-build] [--verify]
#
# The folder (default dist/attnlab-gpu, about 66 MiB), and the same folder as one gzip archive
# next to it (dist/attnlab-gpu.tar.gz, about 22 MiB: OpenBLAS and the CUDA device code compress
# well), the handier one to copy; unpack it there with `tar xzf attnlab-gpu.tar.gz`:
#   bin/        attnlab, bench_train_step, bench_attention, bench_fused, test_core, test_ops,
#               test_cuda, checkpoint_diff (stripped; RUNPATH $ORIGIN/../lib)
#   lib/        libattnlab_core and every shared library they, the programs and
#               the plugins need that is not glibc, the CUDA toolkit or the driver (found with ldd)
#   lib/gcc/    libstdc++ and libgcc_s, used only where the machine's own copies are too old
#   lib/attnlab/plugins/   the plugins (the loader's default folder, next to the core)
#   openmpi/    the OpenMPI runtime attnlab was built against, mpirun included, when it was
#               (scripts/pack-openmpi.sh): `run.sh mpirun -np N "$PWD/bin/attnlab" train ...`
#   bench/      pytorch_train_step.py, gpu_compare.sh, pytorch_sdpa.py and attention_compare.sh
#   env.sh      sets LD_LIBRARY_PATH for attnlab's programs (source it, or use run.sh)
#   run.sh      run.sh PROGRAM [ARGS]: a packed program with env.sh's environment
#   check.sh    ldd on every packed file: each library must resolve into the pack or be glibc /
#               CUDA / driver (run it first on the GPU machine)
#
# --verify (on this machine) runs check.sh, then the packed attnlab version, attnlab plugins,
# test_cuda (which skips without a GPU), test_core, test_ops and one small benchmark step in a
# private mount namespace where the system copies of every packed library and the build tree
# are hidden (bind-mounted over), so anything not taken from the pack fails to load; with OpenMPI
# packed (its own folders and programs hidden too), tests/cli/mpi_data_parallel.sh through the
# packed mpirun.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu
out=$root/dist/attnlab-gpu
do_build=1
verify=0
while (($#)); do
  case $1 in
    --build-dir) build=$(realpath -m "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --no-build) do_build=0; shift ;;
    --verify) verify=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "pack-gpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

programs=(attnlab bench_train_step bench_attention bench_fused test_core test_ops test_cuda checkpoint_diff)

if ((do_build)); then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
                                            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  # Build-tree binaries get the pack's RUNPATH ($ORIGIN/../lib: bin/ and lib/ are siblings in the
  # build tree and in the pack) instead of absolute paths of this machine.
  # oneDNN (host bf16 GEMMs, a 40 MB library) stays out: on the GPU machine bf16 runs on the GPU.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_CUDA=ON -DATTNLAB_DNNL=OFF \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' "${launcher[@]}" >/dev/null
  ninja -C "$build" -j"${JOBS:-2}" "${programs[@]}" plugins/all
fi
for p in "${programs[@]}"; do [[ -x $build/bin/$p ]] || { echo "pack-gpu.sh: $build/bin/$p missing" >&2; exit 1; }; done

# Libraries the GPU machine provides: glibc, the CUDA toolkit's libraries, the driver.
source "$root/scripts/machine-libs.sh"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/gcc" "$out/lib/attnlab/plugins" "$out/bench"
for p in "${programs[@]}"; do cp "$build/bin/$p" "$out/bin/"; done
cp -P "$build"/lib/libattnlab_*.so* "$out/lib/"
cp "$build"/lib/attnlab/plugins/attnlab_*.so "$out/lib/attnlab/plugins/"
# Our own files only (regular files: the .so symlinks stay links); the CUDA device code lives in
# sections strip keeps.
find "$out/bin" "$out/lib" -maxdepth 3 -type f \( -path "$out/bin/*" -o -name 'libattnlab_*' -o -name 'attnlab_*.so' \) \
  -exec strip --strip-unneeded {} +

# The dependency closure, from ldd of every packed file (ldd lists indirect dependencies too).
declare -A packed
elfs=("$out"/bin/* "$out"/lib/libattnlab_*.so* "$out"/lib/attnlab/plugins/*.so)
while read -r name path; do
  [[ -z $name || $name == libattnlab_* ]] && continue
  machine_lib "$name" && continue
  [[ $path == /* && -f $path ]] || { echo "pack-gpu.sh: $name not found on this machine" >&2; exit 1; }
  [[ -n ${packed[$name]:-} ]] && continue
  case $name in
    libstdc++.so.*|libgcc_s.so.*) cp -L "$path" "$out/lib/gcc/$name" ;;
    *) cp -L "$path" "$out/lib/$name" ;;
  esac
  packed[$name]=$path
done < <(for f in "${elfs[@]}"; do LD_LIBRARY_PATH=$build/lib ldd "$f" | awk '$2 == "=>" { print $1, $3 }'; done | sort -u)
printf '%s\n' "${!packed[@]}" | sort >"$out/lib/PACKED"

# mpirun and the rest of OpenMPI's runtime, where attnlab links OpenMPI (data-parallel training).
[[ -n ${packed[libmpi.so.40]:-} ]] && "$root/scripts/pack-openmpi.sh" "$out"

# The newest libstdc++ / libgcc_s symbol versions the packed files need: env.sh uses the
# machine's own copies when they provide them (a newer libstdc++ serves older programs).
readelf -V "${elfs[@]}" "$out"/lib/*.so* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*\|CXXABI_[0-9.]*' | sort -uV |
  awk -F_ '{ last[$1] = $0 } END { for (k in last) print last[k] }' | sort >"$out/lib/gcc/NEEDS"

cp "$root/bench/pytorch_train_step.py" "$root/bench/gpu_compare.sh" "$root/bench/pytorch_sdpa.py" \
  "$root/bench/attention_compare.sh" "$out/bench/"

cat >"$out/env.sh" <<'SH'
# Sourced: LD_LIBRARY_PATH for attnlab's packed programs (not for Python: PyTorch brings its own).
pack_root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pack_path=$pack_root/lib
# libstdc++ / libgcc_s: the machine's own copies when they have every symbol version we need.
pack_sys_cxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ { print $NF; exit }')
pack_gcc=1
if [[ -z ${ATTNLAB_PACK_GCC_RUNTIME:-} && -n $pack_sys_cxx ]]; then
  pack_gcc=0
  while read -r need; do grep -qa "$need" "$pack_sys_cxx" || pack_gcc=1; done <"$pack_root/lib/gcc/NEEDS"
fi
((pack_gcc)) && pack_path=$pack_path:$pack_root/lib/gcc
# CUDA libraries (cuBLAS, cuDNN), each from the loader's cache, else from the usual toolkit
# folders, else from the nvidia-* Python wheels that PyTorch installs.
pack_wheels=
# NCCL (libnccl.so.2) is loaded by name for data-parallel training on GPUs.
for pack_need in libcublasLt.so.13 libcudnn.so.9 libcudnn_graph.so.9 libnccl.so.2; do
  ldconfig -p 2>/dev/null | grep -q "$pack_need " && continue
  pack_found=0
  for d in ${CUDA_HOME:+$CUDA_HOME/lib64 $CUDA_HOME/lib} /usr/local/cuda/lib64 /usr/local/cuda/lib \
           /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -e $d/$pack_need ]] || continue
    [[ :$pack_path: == *:$d:* ]] || pack_path=$pack_path:$d
    pack_found=1
    break
  done
  if ((!pack_found)) && command -v python3 >/dev/null; then
    [[ -n $pack_wheels ]] || pack_wheels=$(python3 -c 'import glob, site; print(" ".join(sorted(set(p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib") + glob.glob(s + "/nvidia/*/*/lib")))))' 2>/dev/null)
    for d in $pack_wheels; do
      [[ -e $d/$pack_need && :$pack_path: != *:$d:* ]] && pack_path=$pack_path:$d
    done
  fi
done
export LD_LIBRARY_PATH=$pack_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# OpenMPI's folders in the pack, mpirun on the PATH (when it is packed).
[[ -e $pack_root/openmpi/env.sh ]] && source "$pack_root/openmpi/env.sh"
unset pack_path pack_sys_cxx pack_gcc pack_wheels pack_need pack_found
SH

cat >"$out/run.sh" <<'SH'
#!/usr/bin/env bash
# run.sh PROGRAM [ARGS...]: a packed program (bin/PROGRAM, or a path) with the pack's libraries.
#   ./run.sh attnlab version      ./run.sh test_cuda      ./run.sh bench_train_step --help
#   ./run.sh mpirun -np 2 "$PWD/bin/attnlab" train exp.toml   (openmpi/bin/mpirun; the ranks get
#                                                          this environment)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/env.sh"
prog=${1:?usage: run.sh PROGRAM [ARGS...]}
shift
if [[ $prog == mpirun && -x $here/openmpi/bin/mpirun ]]; then prog=$here/openmpi/bin/mpirun
elif [[ $prog != */* ]]; then prog=$here/bin/$prog; fi
exec "$prog" "$@"
SH

{
  cat <<'SH'
#!/usr/bin/env bash
# ldd on every packed program and library with env.sh's environment: each dependency must
# resolve into this folder, or be glibc, the CUDA toolkit or the driver. Prints every problem;
# exit status 1 if there is one.
SH
  declare -f glibc_lib cuda_lib machine_lib   # the lists the pack was made with (scripts/machine-libs.sh)
  cat <<'SH'
here=$(cd "$(dirname "$0")" && pwd)
source "$here/env.sh"
bad=0
for f in "$here"/bin/* "$here"/lib/*.so* "$here"/lib/gcc/*.so* "$here"/lib/attnlab/plugins/*.so \
         "$here"/openmpi/bin/* "$here"/openmpi/lib/*.so "$here"/openmpi/pmix/lib/*.so; do
  [[ -e $f ]] || continue
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    if [[ $path == "not" ]]; then echo "$f: $name not found"; bad=1; continue; fi
    machine_lib "$name" && continue
    case $name in libstdc++.so.*|libgcc_s.so.*) continue ;; esac  # the machine's own when new enough (env.sh)
    [[ $(realpath "$path") == "$here"/* ]] || { echo "$f: $name resolves outside the pack: $path"; bad=1; }
  done < <(ldd "$f" 2>&1)
done
((bad)) && exit 1
echo "check.sh: every dependency resolves into $here or to glibc / CUDA / the driver"
SH
} >"$out/check.sh"
chmod +x "$out/run.sh" "$out/check.sh"

echo "packed $(ls "$out/bin" | wc -l) programs, $(ls "$out/lib/attnlab/plugins" | wc -l) plugins, $((${#packed[@]})) libraries" \
  "($(tr '\n' ' ' <"$out/lib/PACKED")) into $out: $(du -sh "$out" | cut -f1)"

if ((verify)); then
  "$out/check.sh"
  # The system copies of the packed libraries (their real files), hidden by /dev/null in a private
  # mount namespace, as is the build tree (compiled-in plugin folders point there), and OpenMPI's
  # own folders, programs and libraries (openmpi/SOURCES) when it is packed.
  hide=()
  for name in "${!packed[@]}"; do hide+=("$(realpath "${packed[$name]}")"); done
  [[ -e $out/openmpi/SOURCES ]] && mapfile -t -O "${#hide[@]}" hide <"$out/openmpi/SOURCES"
  empty=$(mktemp -d)
  trap 'rmdir "$empty"' EXIT
  unshare -m bash -euo pipefail -c '
    empty=$1 build=$2 out=$3 root=$4
    shift 4
    # The tools of this script (mount, grep, sed) need some of the hidden libraries too: they get
    # the packed copies, as the packed programs do through env.sh.
    export LD_LIBRARY_PATH=$out/lib:$out/lib/gcc
    mount --make-rprivate /
    for f in "$@"; do [[ -d $f ]] || mount --bind /dev/null "$f"; done   # files first: some lie in
    for f in "$@"; do [[ ! -d $f ]] || mount --bind "$empty" "$f"; done   # the folders hidden next
    mount --bind "$empty" "$build"
    export ATTNLAB_PACK_GCC_RUNTIME=1   # the packed libstdc++ too: the system copy is hidden
    echo "--- hidden: $# system libraries, programs and folders, and $build"
    echo "--- attnlab version";  "$out/run.sh" attnlab version
    echo "--- attnlab plugins";  "$out/run.sh" attnlab plugins | sed -n 1,4p
    for t in test_cuda test_core test_ops; do
      echo "--- $t"; "$out/run.sh" "$t" 2>&1 | tail -3 | sed -n 1,2p
    done
    echo "--- bench_train_step (one small step on the cpu)"
    "$out/run.sh" bench_train_step --model small --warmup 0 --steps 1 --batch 8 --len 16
    if [[ -x $out/openmpi/bin/mpirun ]]; then
      echo "--- the packed mpirun: data-parallel training on the cpu (tests/cli/mpi_data_parallel.sh)"
      "$out/run.sh" /bin/bash "$root/tests/cli/mpi_data_parallel.sh" "$out/bin/attnlab" "$out/bin/checkpoint_diff" \
        "$out/openmpi/bin/mpirun" | tail -n 2
    fi
  ' verify "$empty" "$build" "$out" "$root" "${hide[@]}"
  echo "pack verified"
fi

# One archive of the folder, written last so that it holds what was verified.
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
echo "packed: $out ($(du -sh "$out" | cut -f1)), $out.tar.gz ($(du -sh "$out.tar.gz" | cut -f1))"
