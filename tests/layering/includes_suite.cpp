// Compiled by tests/CMakeLists.txt against two libraries: attnlab_nmt_suite, where it must build,
// and attnlab_nmt_data, where it must not (data knows nothing of suites: nmt/README.md).
#include "attnlab/nmt/suite/suite.h"

int layering_probe_suite() { return static_cast<int>(sizeof(attnlab::nmt::Suite)); }
