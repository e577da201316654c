# oneDNN (Debian: libdnnl-dev) for the host's bf16 GEMMs (core/src/cpu/bf16_gemm.cpp): matmul
# with AVX512_BF16 instructions and f32 accumulation. Debian's OpenBLAS is built without its
# sbgemm, so oneDNN is the packaged library that has them.
#   ATTNLAB_DNNL=AUTO  use oneDNN when it is there and works (default)
#   ATTNLAB_DNNL=ON    require it
#   ATTNLAB_DNNL=OFF   never (bf16 on the host then widens to f32 and calls sgemm)
# Debian's oneDNN package file needs the OpenCL headers (ocl-icd-opencl-dev, only recommended by
# libdnnl-dev) and stops any configure step that loads it without them: it is tried in a probe
# project first (cmake/AttnlabProbe.cmake), and a missing or broken oneDNN only turns the feature
# off. Sets ATTNLAB_WITH_DNNL.
set(ATTNLAB_DNNL "AUTO" CACHE STRING "Use oneDNN for bf16 GEMMs on the host: AUTO, ON or OFF")
set_property(CACHE ATTNLAB_DNNL PROPERTY STRINGS AUTO ON OFF)

set(ATTNLAB_WITH_DNNL OFF)
set(attnlab_dnnl_feature "oneDNN (host bf16 GEMMs; bf16 on the CPU widens to f32)")
if(ATTNLAB_DNNL STREQUAL "OFF")
  message(STATUS "attnlab: ${attnlab_dnnl_feature} off: ATTNLAB_DNNL=OFF")
elseif(CMAKE_DISABLE_FIND_PACKAGE_dnnl)
  attnlab_optional_off("${attnlab_dnnl_feature}" "CMAKE_DISABLE_FIND_PACKAGE_dnnl is set"
                       "libdnnl-dev ocl-icd-opencl-dev" ATTNLAB_DNNL)
else()
  attnlab_probe(dnnl RESULT attnlab_dnnl_works WHY attnlab_dnnl_why)
  if(attnlab_dnnl_works)
    find_package(dnnl CONFIG REQUIRED)  # the probe has just loaded the same package
    set(ATTNLAB_WITH_DNNL ON)
    message(STATUS "attnlab: host bf16 GEMMs through oneDNN ${dnnl_VERSION}")
  else()
    attnlab_optional_off("${attnlab_dnnl_feature}" "${attnlab_dnnl_why}" "libdnnl-dev ocl-icd-opencl-dev" ATTNLAB_DNNL)
  endif()
endif()
