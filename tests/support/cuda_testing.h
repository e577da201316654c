#pragma once
// For the cuda suite: a test case returns at once, with a message, where no CUDA device is visible
// (a build without CUDA, or a machine without a GPU).
#include <doctest/doctest.h>

#include "attnlab/device.h"

#define SKIP_WITHOUT_CUDA()                \
  if (attnlab::cuda_device_count() == 0) { \
    MESSAGE("no CUDA device: skipped");    \
    return;                                \
  }
