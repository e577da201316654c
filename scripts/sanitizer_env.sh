# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: the sanitizer build's folder, its packages
# and configuration, and the runtime options of AddressSanitizer, UndefinedBehaviorSanitizer and
# LeakSanitizer. Expects the repository root as the working folder.

asan_build_dir=${ATTNLAB_ASAN_BUILD_DIR:-build-asan}

# clang and its runtimes (ASan, UBSan, libFuzzer: libclang-rt-14-dev), LLVM's OpenMP (FindOpenMP
# under clang links libomp) and llvm-symbolizer (llvm-14) for readable stacks; the rest of the
# build's packages come from scripts/setup.sh.
sanitizer_setup() {
  bash scripts/setup.sh
  local packages=(clang libclang-rt-14-dev libomp-14-dev llvm-14) missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "sanitize: installing ${missing[*]}"
    local sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# The CPU tree, every target under ASan + UBSan, the libraries instrumented for libFuzzer and the
# harnesses of fuzz/ built (cmake/AttnlabSanitize.cmake). oneDNN (uninstrumented, with JIT code)
# is left out: bf16 GEMMs on the host take the widening path there. Debug information is line tables only:
# all a sanitizer report needs, and a quarter faster to compile than full -g. Extra arguments go
# to cmake.
sanitizer_configure() {
  cmake -S . -B "$asan_build_dir" -G Ninja \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
    -DATTNLAB_CUDA=OFF -DATTNLAB_CUDNN=OFF -DATTNLAB_DNNL=OFF -DATTNLAB_BUILD_BENCH=OFF \
    -DATTNLAB_SANITIZE=ON -DATTNLAB_FUZZ=ON "$@"
}

# Stop at the first error with a stack; UBSan is fatal at compile time already
# (-fno-sanitize-recover), halt_on_error says so again for code built elsewhere. Leaks are
# reported, except those of system libraries listed in scripts/lsan.supp.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}
# Every tensor's memory straight from malloc and back to free (no host caching allocator), so that
# AddressSanitizer sees a use after free of a tensor's buffer.
export ATTNLAB_NO_CACHING_ALLOCATOR=1
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} && -x /usr/lib/llvm-14/bin/llvm-symbolizer ]]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
fi
