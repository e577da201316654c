# Read by CTest after the discovered nmt tests (tests/CMakeLists.txt): the tests that train with
# two threads for tens of seconds take both cores of a two-core machine under `ctest -j2`.
set_tests_properties(
  "nmt/the synthetic corpus trains to its measured dev perplexity and test BLEU"
  PROPERTIES PROCESSORS 2)
