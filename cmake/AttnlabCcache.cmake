# ATTNLAB_CCACHE selects compiling through ccache:
#   AUTO  use it when ccache is found (default)
#   ON    require it
#   OFF   compile directly
# The C, C++ and CUDA compilers are started as `ccache <compiler> ...` with CCACHE_BASEDIR set to
# the folder that holds the source tree (and ../shared beside it, where CUTLASS lives), so that
# absolute paths become relative ones and a second clone of the same commit, in another folder,
# finds its objects in the cache; CCACHE_NOHASHDIR keeps the working folder out of the hash (the
# sanitizer tree's line tables then name the first clone's folder: ccache's documented trade).
# A compiler launcher already given on the command line is kept.
set(ATTNLAB_CCACHE "AUTO" CACHE STRING "Compile through ccache: AUTO, ON or OFF")
set_property(CACHE ATTNLAB_CCACHE PROPERTY STRINGS AUTO ON OFF)

set(ATTNLAB_WITH_CCACHE OFF)
if(NOT ATTNLAB_CCACHE STREQUAL "OFF")
  find_program(ATTNLAB_CCACHE_PROGRAM ccache)
  if(ATTNLAB_CCACHE_PROGRAM)
    get_filename_component(attnlab_ccache_base "${PROJECT_SOURCE_DIR}/.." ABSOLUTE)
    if(attnlab_ccache_base STREQUAL "/")
      set(attnlab_ccache_base "${PROJECT_SOURCE_DIR}")
    endif()
    set(attnlab_ccache_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${attnlab_ccache_base}
        CCACHE_NOHASHDIR=1 ${ATTNLAB_CCACHE_PROGRAM})
    foreach(language C CXX CUDA)
      if(NOT CMAKE_${language}_COMPILER_LAUNCHER)
        set(CMAKE_${language}_COMPILER_LAUNCHER ${attnlab_ccache_launcher})
      endif()
    endforeach()
    set(ATTNLAB_WITH_CCACHE ON)
    message(STATUS "attnlab: compiling through ${ATTNLAB_CCACHE_PROGRAM} (base folder ${attnlab_ccache_base})")
  elseif(ATTNLAB_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "attnlab: ATTNLAB_CCACHE=ON but no ccache found (install the Debian package ccache)")
  else()
    message(STATUS "attnlab: no ccache found: compiling directly (install the Debian package ccache for faster rebuilds)")
  endif()
endif()
