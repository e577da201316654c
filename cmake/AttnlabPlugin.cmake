# attnlab_add_plugin(<target> SOURCES <files...> [LIBRARIES <libs...>] [OUTPUT_DIRECTORY <dir>]
#                    [NO_INSTALL])
#
# Builds an attnlab plugin: a loadable module named <target>.so (no "lib" prefix; name it
# attnlab_<family>_<name> so that the loader's search finds it) linking the attnlab core, with
# hidden visibility so that only the ATTNLAB_PLUGIN entry point is exported.
# Used for the plugins of this repository and, from the installed package
# (find_package(attnlab)), for plugins built outside it.
function(attnlab_add_plugin target)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "attnlab_add_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE attnlab::core ${ARG_LIBRARIES})
  target_compile_features(${target} PRIVATE cxx_std_20)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
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
