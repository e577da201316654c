# ATTNLAB_CUDA selects the CUDA backend:
#   AUTO  compile the CUDA parts when a working CUDA toolkit is found (default)
#   ON    require one
#   OFF   CPU only; CUDA tensors then fail at run time with "built without CUDA"
# A toolkit is used only once a probe project (cmake/probes/cuda) has compiled a C++20 kernel with
# it and linked cuBLAS and cuBLASLt: an nvcc too old for C++20, or one without the libraries,
# turns the backend off with one line instead of failing the configure step or the build.
# Compiler settings: cmake/AttnlabCudaSettings.cmake.
include(${CMAKE_CURRENT_LIST_DIR}/AttnlabCudaSettings.cmake)
set(ATTNLAB_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE ATTNLAB_CUDA PROPERTY STRINGS AUTO ON OFF)

set(ATTNLAB_WITH_CUDA OFF)
set(attnlab_cuda_feature "the CUDA backend (building the CPU backend only)")
set(attnlab_cuda_packages "NVIDIA's CUDA toolkit 12 or later, with nvcc on PATH or in /usr/local/cuda/bin")
if(ATTNLAB_CUDA STREQUAL "OFF")
  message(STATUS "attnlab: ${attnlab_cuda_feature} off: ATTNLAB_CUDA=OFF")
else()
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(ATTNLAB_NVCC nvcc PATHS /usr/local/cuda/bin)
    if(ATTNLAB_NVCC)
      set(CMAKE_CUDA_COMPILER ${ATTNLAB_NVCC})
    endif()
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    attnlab_optional_off("${attnlab_cuda_feature}" "no CUDA compiler (nvcc) found" "${attnlab_cuda_packages}" ATTNLAB_CUDA)
  else()
    set(ATTNLAB_CUDA_SETTINGS ${CMAKE_CURRENT_LIST_DIR}/AttnlabCudaSettings.cmake)
    attnlab_probe(cuda RESULT attnlab_cuda_works WHY attnlab_cuda_why
                  VARIABLES CMAKE_CUDA_COMPILER CMAKE_CUDA_ARCHITECTURES CMAKE_CUDA_HOST_COMPILER ATTNLAB_CUDA_SETTINGS)
    if(attnlab_cuda_works)
      attnlab_cuda_before_language()
      enable_language(CUDA)
      attnlab_cuda_after_language()
      find_package(CUDAToolkit REQUIRED)  # the probe has just found the same toolkit
      set(ATTNLAB_WITH_CUDA ON)
      message(STATUS "attnlab: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}): building the CUDA backend")
    else()
      attnlab_optional_off("${attnlab_cuda_feature}" "${CMAKE_CUDA_COMPILER}: ${attnlab_cuda_why}"
                           "${attnlab_cuda_packages}" ATTNLAB_CUDA)
    endif()
  endif()
endif()
