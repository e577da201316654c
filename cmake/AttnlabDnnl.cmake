# oneDNN (Debian: libdnnl-dev) for the host's GEMMs: its sgemm for f32 products, about twice
# OpenBLAS 0.3.21's rate on AVX-512 CPUs (core/src/cpu/onednn_sgemm.cpp), and its matmul with
# AVX512_BF16 instructions and f32 accumulation for bf16 (core/src/cpu/bf16_gemm.cpp; Debian's
# OpenBLAS is built without its sbgemm, so oneDNN is the packaged library that has them).
#   ATTNLAB_DNNL=AUTO  use oneDNN when it is there and works (default)
#   ATTNLAB_DNNL=ON    require it
#   ATTNLAB_DNNL=OFF   never (OpenBLAS computes every f32 product; bf16 on the host widens to f32)
# Debian's oneDNN package file needs the OpenCL headers (ocl-icd-opencl-dev, only recommended by
# libdnnl-dev) and stops any configure step that loads it without them: it is tried in a probe
# project first (cmake/AttnlabProbe.cmake), and a missing or broken oneDNN only turns the feature
# off. Sets ATTNLAB_WITH_DNNL.
set(ATTNLAB_DNNL "AUTO" CACHE STRING "Use oneDNN for f32 and bf16 GEMMs on the host: AUTO, ON or OFF")
set_property(CACHE ATTNLAB_DNNL PROPERTY STRINGS AUTO ON OFF)

set(ATTNLAB_WITH_DNNL OFF)
set(attnlab_dnnl_feature "oneDNN (host f32 and bf16 GEMMs; without it f32 runs on OpenBLAS and bf16 widens to f32)")
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
    message(STATUS "attnlab: host f32 and bf16 GEMMs through oneDNN ${dnnl_VERSION}")
  else()
    attnlab_optional_off("${attnlab_dnnl_feature}" "${attnlab_dnnl_why}" "libdnnl-dev ocl-icd-opencl-dev" ATTNLAB_DNNL)
  endif()
endif()
