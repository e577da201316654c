#include "attnlab/plugin/family.h"

#include "attnlab/error.h"

namespace attnlab {

std::string_view family_name(PluginFamily family) { return kPluginFamilies.name(family); }

PluginFamily family_from_name(std::string_view name) { return kPluginFamilies.parse(name); }

}  // namespace attnlab
