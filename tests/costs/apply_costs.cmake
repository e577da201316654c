# Read by CTest (TEST_INCLUDE_FILES, after the discovered tests): each test's COST, the seconds it
# took in a recorded full run (a CTestCostData.txt: lines "NAME RUNS SECONDS" until "---"), so
# that `ctest -j` starts the slowest tests first. The record is this machine's last full run of the
# kind ATTNLAB_COST_KIND (plain or sanitize), which scripts/test.sh and scripts/sanitize.sh keep in
# ${XDG_CACHE_HOME:-~/.cache}/attnlab/ctest-costs/, else the snapshot ATTNLAB_COST_SNAPSHOT in the
# tree. CTest's own cost data does this
# for names without spaces only (it reads a line's first word as the name), and the doctest cases'
# names have spaces. A test missing from the file keeps CTest's default; a name the file has that
# no test has is ignored.
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(attnlab_cost_file "$ENV{XDG_CACHE_HOME}/attnlab/ctest-costs/${ATTNLAB_COST_KIND}.txt")
else()
  set(attnlab_cost_file "$ENV{HOME}/.cache/attnlab/ctest-costs/${ATTNLAB_COST_KIND}.txt")
endif()
if(NOT EXISTS "${attnlab_cost_file}")
  set(attnlab_cost_file "${ATTNLAB_COST_SNAPSHOT}")
endif()
if(EXISTS "${attnlab_cost_file}")
  file(STRINGS "${attnlab_cost_file}" attnlab_cost_lines)
  foreach(line IN LISTS attnlab_cost_lines)
    if(line STREQUAL "---")
      break()
    endif()
    if(line MATCHES "^(.+) [0-9]+ ([0-9.eE+-]+)$")
      set_tests_properties("${CMAKE_MATCH_1}" PROPERTIES COST "${CMAKE_MATCH_2}")
    endif()
  endforeach()
endif()
