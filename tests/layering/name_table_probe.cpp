// Built by two tests (tests/CMakeLists.txt): a name table that names every value of its enum
// compiles; one that leaves a value out (ATTNLAB_PROBE_MISSING) must not, naming why.
#include "attnlab/name_table.h"

namespace {

enum class Shade { light, dark, none };

#ifdef ATTNLAB_PROBE_MISSING
constexpr auto kShades = attnlab::name_table<Shade>("shade", {{Shade::light, "light"}, {Shade::dark, "dark"}});
#else
constexpr auto kShades =
    attnlab::name_table<Shade>("shade", {{Shade::light, "light"}, {Shade::dark, "dark"}, {Shade::none, "none"}});
#endif

}  // namespace

int name_table_probe() { return static_cast<int>(kShades.entries.size()); }
