# Sanitizer and fuzzing builds (scripts/sanitize.sh, fuzz/README.md):
#   ATTNLAB_SANITIZE=ON  AddressSanitizer + UndefinedBehaviorSanitizer on every C/C++ target (core,
#                        nmt, plugins, apps, tests); undefined behaviour aborts at the first report,
#                        so that it fails the test instead of printing and passing.
#   ATTNLAB_FUZZ=ON      libFuzzer harnesses in fuzz/ (clang only, with ATTNLAB_SANITIZE): the libraries
#                        they exercise get libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link,
#                        attnlab_fuzz_instrument() below), each harness links libFuzzer's main
#                        (-fsanitize=fuzzer, in fuzz/).
# The sanitizer flags are directory-wide, so that this file must be included before the first
# add_subdirectory(). They go to C and C++ only: nvcc takes none of them (the sanitizer job builds
# the CPU tree).
option(ATTNLAB_SANITIZE "Build everything with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(ATTNLAB_FUZZ "Build the libFuzzer harnesses in fuzz/ (clang, with ATTNLAB_SANITIZE)" OFF)

if(ATTNLAB_SANITIZE)
  set(attnlab_sanitize_flags -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${attnlab_sanitize_flags}>")
  add_link_options(${attnlab_sanitize_flags})
  if(ATTNLAB_WITH_CUDA)
    message(WARNING "ATTNLAB_SANITIZE with CUDA: the .cu files are not instrumented and ASan needs "
                    "ASAN_OPTIONS=protect_shadow_gap=0 beside the CUDA driver; the sanitizer job builds with ATTNLAB_CUDA=OFF")
  endif()
endif()

if(ATTNLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ATTNLAB_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                        "configure with -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # The coverage callbacks of fuzzer-no-link code are defined by the sanitizer runtime (weakly) or
  # by libFuzzer: without ASan the tests and the program would not link, and a harness would find
  # crashes only.
  if(NOT ATTNLAB_SANITIZE)
    message(FATAL_ERROR "ATTNLAB_FUZZ needs ATTNLAB_SANITIZE=ON")
  endif()
endif()

# attnlab_fuzz_instrument(<target>...): coverage for libFuzzer in a library the harnesses read
# input through (the nmt subsystems, attnlab_config). Not the core, the plugins or the tests: the
# harnesses barely touch them, and a callback on every comparison of every kernel loop would slow
# the sanitizer job's test run for nothing.
function(attnlab_fuzz_instrument)
  if(ATTNLAB_FUZZ)
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>")
    endforeach()
  endif()
endfunction()
