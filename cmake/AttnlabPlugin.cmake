# attnlab_add_plugin(<target> SOURCES <files...> [CUDA_SOURCES <files...>] [LIBRARIES <libs...>]
#                    [OUTPUT_DIRECTORY <dir>] [NO_INSTALL])
#
# Builds an attnlab plugin: a loadable module named <target>.so (no "lib" prefix; name it
# attnlab_<family>_<name> so that the loader's search finds it) linking the attnlab core, with
# hidden visibility so that only the ATTNLAB_PLUGIN entry point is exported.
# CUDA_SOURCES (.cu kernels and the *_cuda.cpp host code that calls them) are compiled only when
# the attnlab core was built with CUDA; see attnlab_plugin_cuda_sources().
# Used for the plugins of this repository and, from the installed package
# (find_package(attnlab)), for plugins built outside it.
function(attnlab_add_plugin target)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;CUDA_SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "attnlab_add_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE attnlab::core ${ARG_LIBRARIES})
  target_compile_features(${target} PRIVATE cxx_std_20)
  attnlab_plugin_cuda_sources(${target} ${ARG_CUDA_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  # Installed plugins find the core two folders up (lib/attnlab/plugins -> lib).
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/../..")
  if(NOT ARG_NO_INSTALL)
    set_property(GLOBAL APPEND PROPERTY ATTNLAB_PLUGIN_TARGETS ${target})
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED ATTNLAB_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ATTNLAB_PLUGIN_OUTPUT_DIR})
  endif()
endfunction()

# attnlab_plugin_cuda_sources(<target> [<files...>])
#
# The plugin side of the core's single CUDA guard (attnlab/dispatch.h): when the attnlab core was
# built with CUDA (ATTNLAB_WITH_CUDA), adds <files...> to <target>, links the CUDA runtime and
# defines ATTNLAB_WITH_CUDA=1 for it, so that ATTNLAB_DISPATCH calls the plugin's fn_cuda(...);
# otherwise the files are left out and ATTNLAB_WITH_CUDA=0 makes a CUDA tensor fail with "built
# without CUDA". Plugin code itself never tests for CUDA. attnlab_add_plugin() calls this with its
# CUDA_SOURCES; call it directly for a library a plugin links (e.g. its kernels, shared with tests).
function(attnlab_plugin_cuda_sources target)
  set(sources ${ARGN})
  if(ATTNLAB_WITH_CUDA AND sources)
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "CUDA" IN_LIST languages)
      message(FATAL_ERROR "${target}: the attnlab core was built with CUDA and CUDA sources are given: "
                          "call enable_language(CUDA) (and find_package(CUDAToolkit)) before adding it")
    endif()
    target_sources(${target} PRIVATE ${sources})
    target_link_libraries(${target} PRIVATE CUDA::cudart)
    target_compile_definitions(${target} PRIVATE ATTNLAB_WITH_CUDA=1)
  else()
    target_compile_definitions(${target} PRIVATE ATTNLAB_WITH_CUDA=0)
  endif()
endfunction()
