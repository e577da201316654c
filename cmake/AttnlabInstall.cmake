# The SDK: `cmake --install build --prefix P` lays out
#   P/include/attnlab/...            public headers (with the generated version.h, build_info.h)
#   P/lib/libattnlab_core.so         the core
#   P/lib/attnlab/plugins/*.so       the plugins (the loader's default search folder)
#   P/bin/attnlab                    the program
#   P/lib/cmake/attnlab/             find_package(attnlab) with attnlab_add_plugin()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS attnlab_core EXPORT attnlabTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/attnlab DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES
  ${PROJECT_BINARY_DIR}/core/generated/attnlab/version.h
  ${PROJECT_BINARY_DIR}/core/generated/attnlab/build_info.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnlab)
install(TARGETS attnlab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The NMT layer (nmt/) is linked into the program statically: nothing of it is installed.

get_property(plugin_targets GLOBAL PROPERTY ATTNLAB_PLUGIN_TARGETS)
install(TARGETS ${plugin_targets} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/attnlab/plugins)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/attnlab)
install(EXPORT attnlabTargets NAMESPACE attnlab:: DESTINATION ${config_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attnlabConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attnlabConfig.cmake INSTALL_DESTINATION ${config_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnlabConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/attnlabConfig.cmake
  ${PROJECT_BINARY_DIR}/attnlabConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/AttnlabPlugin.cmake
  DESTINATION ${config_dir})
