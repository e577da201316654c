// The nmt library's version string (the library needs one translation unit before the rest lands).
#include "attnlab/version.h"

namespace attnlab::nmt {
const char* nmt_version() { return ATTNLAB_VERSION_STRING; }
}  // namespace attnlab::nmt
