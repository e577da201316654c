# ATTNLAB_CUTLASS selects flash's Hopper (sm_90a) forward kernel, written with CuTe from NVIDIA
# CUTLASS 4.7.0 (header-only):
#   AUTO  build it when the CUDA backend is built and CUTLASS is found (default)
#   ON    require it
#   OFF   leave it out; flash keeps its sm_80 and FMA kernels on every GPU
# CUTLASS is looked for in ATTNLAB_CUTLASS_DIR (its include/ folder holds cute/tensor.hpp), by
# default ../shared/third_party/cutlass-4.7.0 beside the repository; with ATTNLAB_FETCH_CUTLASS=ON
# a machine that is online downloads the same release (tag v4.7.0) with FetchContent instead.
# Sets ATTNLAB_WITH_CUTLASS and ATTNLAB_CUTLASS_INCLUDE_DIR.
set(ATTNLAB_CUTLASS "AUTO" CACHE STRING "Build flash's Hopper kernel (needs CUTLASS): AUTO, ON or OFF")
set_property(CACHE ATTNLAB_CUTLASS PROPERTY STRINGS AUTO ON OFF)
set(ATTNLAB_CUTLASS_DIR "${PROJECT_SOURCE_DIR}/../shared/third_party/cutlass-4.7.0" CACHE PATH
    "NVIDIA CUTLASS 4.7.0 (the folder that holds include/cute)")
option(ATTNLAB_FETCH_CUTLASS "Download CUTLASS 4.7.0 when ATTNLAB_CUTLASS_DIR has none" OFF)

set(ATTNLAB_WITH_CUTLASS OFF)
set(attnlab_cutlass_feature "flash's Hopper kernel (sm_90a warpgroup MMA)")
set(attnlab_cutlass_packages "NVIDIA CUTLASS 4.7.0 at ATTNLAB_CUTLASS_DIR, or -DATTNLAB_FETCH_CUTLASS=ON")
if(ATTNLAB_CUTLASS STREQUAL "OFF")
  message(STATUS "attnlab: ${attnlab_cutlass_feature} off: ATTNLAB_CUTLASS=OFF")
elseif(NOT ATTNLAB_WITH_CUDA)
  attnlab_optional_off("${attnlab_cutlass_feature}" "the CUDA backend is off" "the CUDA toolkit" ATTNLAB_CUTLASS)
else()
  if(NOT EXISTS "${ATTNLAB_CUTLASS_DIR}/include/cute/tensor.hpp" AND ATTNLAB_FETCH_CUTLASS)
    include(FetchContent)
    FetchContent_Declare(cutlass GIT_REPOSITORY https://github.com/NVIDIA/cutlass.git GIT_TAG v4.7.0
                         GIT_SHALLOW TRUE)
    FetchContent_Populate(cutlass)
    set(ATTNLAB_CUTLASS_DIR "${cutlass_SOURCE_DIR}" CACHE PATH "NVIDIA CUTLASS 4.7.0" FORCE)
  endif()
  if(EXISTS "${ATTNLAB_CUTLASS_DIR}/include/cute/tensor.hpp")
    set(ATTNLAB_WITH_CUTLASS ON)
    # Without "..": ccache makes the folder relative to the build's (cmake/AttnlabCcache.cmake).
    get_filename_component(ATTNLAB_CUTLASS_INCLUDE_DIR "${ATTNLAB_CUTLASS_DIR}/include" ABSOLUTE)
    message(STATUS "attnlab: ${attnlab_cutlass_feature}: CuTe from ${ATTNLAB_CUTLASS_DIR}")
  else()
    attnlab_optional_off("${attnlab_cutlass_feature}" "no CUTLASS in ${ATTNLAB_CUTLASS_DIR}"
                         "${attnlab_cutlass_packages}" ATTNLAB_CUTLASS)
  endif()
endif()
