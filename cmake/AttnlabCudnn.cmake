# cuDNN for the `cudnn` attention plugin (plugins/attention/cudnn), in CUDA builds only.
#   ATTNLAB_CUDNN=AUTO  build the plugin when cuDNN 9 headers and library are found (default)
#   ATTNLAB_CUDNN=ON    require them
#   ATTNLAB_CUDNN=OFF   never build the plugin
# Searched beside the CUDA toolkit and under $CUDNN_ROOT, then tried in a probe project (a header
# without its library, or one that does not link, turns the plugin off). Sets ATTNLAB_WITH_CUDNN
# and, when ON, the imported target attnlab::cudnn.
set(ATTNLAB_CUDNN "AUTO" CACHE STRING "Build the cudnn attention plugin: AUTO, ON or OFF")
set_property(CACHE ATTNLAB_CUDNN PROPERTY STRINGS AUTO ON OFF)

set(ATTNLAB_WITH_CUDNN OFF)
set(attnlab_cudnn_why "")
if(NOT ATTNLAB_WITH_CUDA)
  set(attnlab_cudnn_why "CPU-only build")
elseif(ATTNLAB_CUDNN STREQUAL "OFF")
  set(attnlab_cudnn_why "ATTNLAB_CUDNN=OFF")
else()
  find_path(CUDNN_INCLUDE_DIR cudnn_version.h
    HINTS $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY cudnn
    HINTS $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES lib64 lib)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND EXISTS ${CUDNN_INCLUDE_DIR}/cudnn_version.h)
    file(STRINGS ${CUDNN_INCLUDE_DIR}/cudnn_version.h attnlab_cudnn_major REGEX "^#define CUDNN_MAJOR +[0-9]+")
    string(REGEX REPLACE "^#define CUDNN_MAJOR +" "" attnlab_cudnn_major "${attnlab_cudnn_major}")
    if(attnlab_cudnn_major GREATER_EQUAL 9)
      # Headers and library found: a program using them must also compile and link.
      attnlab_probe(cudnn RESULT attnlab_cudnn_works WHY attnlab_cudnn_probe_why
                    VARIABLES CUDNN_INCLUDE_DIR CUDNN_LIBRARY CMAKE_CUDA_COMPILER)
      if(attnlab_cudnn_works)
        add_library(attnlab::cudnn UNKNOWN IMPORTED)
        set_target_properties(attnlab::cudnn PROPERTIES
          IMPORTED_LOCATION ${CUDNN_LIBRARY}
          INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
        set(ATTNLAB_WITH_CUDNN ON)
      else()
        set(attnlab_cudnn_why "${CUDNN_LIBRARY}: ${attnlab_cudnn_probe_why}")
      endif()
    else()
      set(attnlab_cudnn_why "cuDNN ${attnlab_cudnn_major} at ${CUDNN_INCLUDE_DIR} is older than 9")
    endif()
  else()
    set(attnlab_cudnn_why "cudnn_version.h / libcudnn not found (set CUDNN_ROOT)")
  endif()
endif()

if(ATTNLAB_WITH_CUDNN)
  message(STATUS "attnlab: cuDNN ${attnlab_cudnn_major} (${CUDNN_LIBRARY}): building the cudnn attention plugin")
elseif(NOT ATTNLAB_WITH_CUDA OR ATTNLAB_CUDNN STREQUAL "OFF")
  message(STATUS "attnlab: the cudnn attention plugin off: ${attnlab_cudnn_why}")
else()
  attnlab_optional_off("the cudnn attention plugin" "${attnlab_cudnn_why}" "cudnn9-cuda-13, NVIDIA's cuDNN 9 package"
                       ATTNLAB_CUDNN)
endif()
