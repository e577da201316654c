# shellcheck shell=bash
# Sourced by scripts/pack-gpu.sh and scripts/pack-openmpi.sh, and written into a pack's check.sh:
# the shared libraries a GPU machine brings itself, which a pack leaves out (by soname).

# glibc's libraries and the dynamic loader: the machine's own always.
glibc_lib() {
  case $1 in
    linux-vdso.so.*|ld-linux-x86-64.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|\
    libutil.so.*|libmvec.so.*) return 0 ;;
  esac
  return 1
}

# The CUDA toolkit's libraries (the machine's CUDA runtime or PyTorch's wheels) and the driver.
cuda_lib() {
  case $1 in
    libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libcudnn*.so.*|libnvrtc*.so.*|libnvJitLink.so.*|\
    libcufft*.so.*|libcurand.so.*|libcusparse*.so.*|libnvidia-*.so.*) return 0 ;;
  esac
  return 1
}

# Either: what a pack leaves to the machine.
machine_lib() { glibc_lib "$1" || cuda_lib "$1"; }
