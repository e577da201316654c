# How attnlab compiles CUDA, shared by the build (AttnlabCuda.cmake) and its probe (probes/cuda).
# Kernels are compiled for sm_80 (Ampere: A100, A6000, RTX 30xx) and sm_90 (Hopper) plus PTX for
# newer GPUs, as C++20; the bf16 tensor-core kernels need sm_80. A GPU outside the list is refused
# by check_device_available with the setting to change.
macro(attnlab_cuda_before_language)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
  endif()
endmacro()

macro(attnlab_cuda_after_language)
  # CMake 3.25 predates nvcc 13 and does not know its C++20 flag: tell it.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  # System include folders as `-isystem PATH` (nvcc takes both spellings), not CMake's default
  # `-isystem=PATH`, which ccache does not read as a path: CUTLASS's folder then stays absolute in
  # the hash and another clone's build misses the cache (cmake/AttnlabCcache.cmake).
  set(CMAKE_INCLUDE_SYSTEM_FLAG_CUDA "-isystem ")
endmacro()
