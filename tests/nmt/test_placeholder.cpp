#include <doctest/doctest.h>

#include <cstring>

#include "attnlab/version.h"

namespace attnlab::nmt {
const char* nmt_version();
}

TEST_CASE("the nmt library links") { CHECK(std::strcmp(attnlab::nmt::nmt_version(), ATTNLAB_VERSION_STRING) == 0); }
