# oneDNN (Debian: libdnnl-dev) for the host's bf16 GEMMs (core/src/cpu/bf16_gemm.cpp): matmul
# with AVX512_BF16 instructions and f32 accumulation. Debian's OpenBLAS is built without its
# sbgemm, so oneDNN is the packaged library that has them.
#   ATTNLAB_DNNL=AUTO  use oneDNN when its CMake package is found (default)
#   ATTNLAB_DNNL=ON    require it
#   ATTNLAB_DNNL=OFF   never (bf16 on the host then widens to f32 and calls sgemm)
# Sets ATTNLAB_WITH_DNNL.
set(ATTNLAB_DNNL "AUTO" CACHE STRING "Use oneDNN for bf16 GEMMs on the host: AUTO, ON or OFF")
set_property(CACHE ATTNLAB_DNNL PROPERTY STRINGS AUTO ON OFF)

set(ATTNLAB_WITH_DNNL OFF)
if(NOT ATTNLAB_DNNL STREQUAL "OFF")
  find_package(dnnl CONFIG QUIET)
  if(TARGET DNNL::dnnl)
    set(ATTNLAB_WITH_DNNL ON)
    message(STATUS "attnlab: host bf16 GEMMs through oneDNN ${dnnl_VERSION}")
  elseif(ATTNLAB_DNNL STREQUAL "ON")
    message(FATAL_ERROR "ATTNLAB_DNNL=ON but oneDNN was not found (apt-get install libdnnl-dev)")
  else()
    message(STATUS "attnlab: oneDNN not found: bf16 on the host widens to f32 (apt-get install libdnnl-dev)")
  endif()
else()
  message(STATUS "attnlab: ATTNLAB_DNNL=OFF: bf16 on the host widens to f32")
endif()
