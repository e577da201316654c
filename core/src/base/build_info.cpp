#include "attnlab/build_info.h"

#include "attnlab/version.h"

namespace attnlab {

const char* core_build_id() { return ATTNLAB_BUILD_ID; }
const char* core_version() { return ATTNLAB_VERSION_STRING; }

}  // namespace attnlab
