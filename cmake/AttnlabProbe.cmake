# Optional dependencies are tried in a throw-away CMake project before the real build uses them,
# so that a package that is missing, half installed or broken (a CMake package file that fails on
# a dependency of its own, a header without its library, a library that does not link) turns its
# feature off with one line instead of stopping the configure step:
#
#   attnlab: <feature> off: <the first error the probe met> (install <Debian packages>)
#
# attnlab_probe(<name> RESULT <var> WHY <var> [VARIABLES <variable>...])
#   Configures and builds cmake/probes/<name>/ (a CMakeLists.txt and a main that links what the
#   feature needs) in its own CMake process, with this project's compilers and search paths and the
#   VARIABLES that are defined here. <RESULT> is TRUE when it built; otherwise <WHY> holds the
#   probe's most telling error line.
# attnlab_optional_off(<feature> <why> <packages> <mode-variable>)
#   The one line above, or a fatal error when <mode-variable> is ON (the user required the feature).

function(attnlab_probe name)
  cmake_parse_arguments(ARG "" "RESULT;WHY" "VARIABLES" ${ARGN})
  set(binary_dir ${CMAKE_BINARY_DIR}/CMakeFiles/attnlab-probes/${name})
  file(REMOVE_RECURSE ${binary_dir})
  # The probe sees this project's compilers and search paths, and any package location or disabled
  # package given on the command line, through an initial cache (values may be lists).
  set(cache "")
  get_cmake_property(cache_variables CACHE_VARIABLES)
  set(forwarded CMAKE_CXX_COMPILER CMAKE_C_COMPILER CMAKE_PREFIX_PATH CMAKE_MODULE_PATH ${ARG_VARIABLES})
  foreach(variable IN LISTS forwarded cache_variables)
    if(NOT DEFINED ${variable})
      continue()
    endif()
    if(variable IN_LIST forwarded OR variable MATCHES "^CMAKE_DISABLE_FIND_PACKAGE_"
       OR (variable MATCHES "^([A-Za-z0-9_]+_DIR|[A-Za-z0-9_]+_ROOT)$" AND NOT variable MATCHES "^(CMAKE_|attnlab_|ATTNLAB_)"))
      string(REPLACE "\\" "\\\\" value "${${variable}}")
      string(REPLACE "\"" "\\\"" value "${value}")
      string(REPLACE "$" "\\$" value "${value}")
      string(APPEND cache "set(${variable} \"${value}\" CACHE STRING \"\")\n")
    endif()
  endforeach()
  file(WRITE ${binary_dir}/initial-cache.cmake "${cache}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${PROJECT_SOURCE_DIR}/cmake/probes/${name} -B ${binary_dir} -G ${CMAKE_GENERATOR}
            -C ${binary_dir}/initial-cache.cmake -DCMAKE_BUILD_TYPE=Release
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(status EQUAL 0)
    execute_process(COMMAND ${CMAKE_COMMAND} --build ${binary_dir}
                    RESULT_VARIABLE status OUTPUT_VARIABLE build_output ERROR_VARIABLE build_output)
    string(APPEND output "${build_output}")
  endif()
  file(WRITE ${binary_dir}/probe.log "${output}")
  if(status EQUAL 0)
    set(${ARG_RESULT} TRUE PARENT_SCOPE)
    set(${ARG_WHY} "" PARENT_SCOPE)
  else()
    attnlab_probe_reason("${output}" why)
    set(${ARG_RESULT} FALSE PARENT_SCOPE)
    set(${ARG_WHY} "${why}" PARENT_SCOPE)
  endif()
endfunction()

# What a failed probe's output says went wrong, as one line: a compiler CMake cannot identify, or
# the first "CMake Error" message (a package not found, or a package file that failed), else the
# first compiler or linker error.
function(attnlab_probe_reason output out_var)
  string(REPLACE ";" "," output "${output}")
  string(REPLACE "\n" ";" lines "${output}")
  set(reason "")
  set(in_message FALSE)
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line MATCHES "compiler identification is unknown")
      string(REGEX REPLACE "^-- " "" reason "${line}")
      break()
    elseif(in_message)
      if(line MATCHES "^(Call Stack|-- |CMake )")
        break()
      endif()
      if(NOT line STREQUAL "")
        string(APPEND reason " ${line}")
      endif()
    elseif(line MATCHES "^CMake Error")
      set(in_message TRUE)
    endif()
  endforeach()
  if(reason STREQUAL "")
    foreach(line IN LISTS lines)
      if(line MATCHES "(error:|undefined reference|cannot find -l|No such file or directory)")
        string(REGEX REPLACE "^.*(fatal error:|error:)" "\\1" reason "${line}")
        break()
      endif()
    endforeach()
  endif()
  string(STRIP "${reason}" reason)
  # CMake's long text for a package file that is not there, in a few words.
  if(reason MATCHES "package configuration file provided by \"([^\"]+)\"")
    set(reason "no CMake package \"${CMAKE_MATCH_1}\" found")
  endif()
  if(reason STREQUAL "")
    set(reason "the probe project did not build")
  endif()
  string(LENGTH "${reason}" length)
  if(length GREATER 240)
    string(SUBSTRING "${reason}" 0 237 reason)
    string(APPEND reason "...")
  endif()
  set(${out_var} "${reason}" PARENT_SCOPE)
endfunction()

function(attnlab_optional_off feature why packages mode_variable)
  if("${${mode_variable}}" STREQUAL "ON")
    message(FATAL_ERROR "${mode_variable}=ON but ${feature} cannot be built: ${why} (install ${packages})")
  endif()
  message(STATUS "attnlab: ${feature} off: ${why} (install ${packages})")
endfunction()
