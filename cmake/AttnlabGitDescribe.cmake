# Run at every build (cmake -P) by the attnlab_git_describe target: writes OUT, a header defining
# ATTNLAB_GIT_DESCRIBE as `git describe --always --dirty` of SOURCE_DIR ("unknown" outside a git
# checkout), rewriting it only when the description changed so that nothing recompiles otherwise.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --tags
                OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE status ERROR_QUIET)
if(NOT status EQUAL 0 OR describe STREQUAL "")
  set(describe "unknown")
endif()
set(text "#pragma once\n// Generated at build time by cmake/AttnlabGitDescribe.cmake.\n#define ATTNLAB_GIT_DESCRIBE \"${describe}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
