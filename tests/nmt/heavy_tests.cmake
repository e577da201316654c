# Read by CTest after the discovered nmt tests (tests/CMakeLists.txt): the tests that train with
# two threads for tens of seconds take both cores of a two-core machine under `ctest -j2`. Alone
# on the machine, they keep the OpenMP runtimes' default waits (spinning is fastest there; the
# short waits the other tests get are for sharing the cores): these modifications come after the
# suite's and unset both variables.
# Label training-outcome: what a long run reaches, which the sanitizer job leaves out
# (scripts/sanitize.sh).
set_tests_properties(
  "nmt/the synthetic corpus trains to its measured dev perplexity and test BLEU"
  PROPERTIES PROCESSORS 2 ENVIRONMENT_MODIFICATION "GOMP_SPINCOUNT=unset:;KMP_BLOCKTIME=unset:"
  LABELS "nmt;training-outcome")
# What the copy task reaches after 45 s of training under the sanitizers (12 s without): an outcome,
# whose code paths the shorter training tests run under the sanitizers too.
set_tests_properties(
  "nmt/a tiny transformer learns to copy sequences to near-zero loss"
  PROPERTIES LABELS "nmt;training-outcome")
