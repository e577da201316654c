#pragma once
// The core's gradient checker (attnlab/testing/gradcheck.h) and a doctest check around it.
#include "attnlab/testing/gradcheck.h"

#define CHECK_GRADCHECK(...)                                         \
  do {                                                               \
    auto gc_result_ = ::attnlab::testing::gradcheck(__VA_ARGS__);    \
    CHECK_MESSAGE(gc_result_.ok, gc_result_.message);                \
  } while (0)
