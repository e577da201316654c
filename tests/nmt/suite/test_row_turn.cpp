#include <doctest/doctest.h>

#include <set>

#include "attnlab/nmt/suite/suite_runner.h"

using namespace attnlab::nmt;

TEST_CASE("a row's end survives a child's exit status, and any other status is a failure") {
  const RowEnd ends[] = {RowEnd::finished, RowEnd::held, RowEnd::lost, RowEnd::failed, RowEnd::interrupted};
  std::set<int> codes;
  for (const RowEnd end : ends) {
    CHECK(row_end_of_exit_code(row_end_exit_code(end)) == end);
    codes.insert(row_end_exit_code(end));
  }
  CHECK(codes.size() == 5);
  CHECK(row_end_exit_code(RowEnd::finished) == 0);
  CHECK(row_end_exit_code(RowEnd::interrupted) == 130);  // what SIGINT's default action gives too
  // A crash (SIGSEGV, SIGABRT, SIGKILL), the CLI's own errors, a program that could not be run.
  for (const int code : {2, 4, 126, 127, 128 + 6, 128 + 9, 128 + 11}) CHECK(row_end_of_exit_code(code) == RowEnd::failed);
}
