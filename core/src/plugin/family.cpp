#include "attnlab/plugin/family.h"

#include "attnlab/error.h"

namespace attnlab {

std::string_view family_name(PluginFamily family) {
  return kPluginFamilyNames[static_cast<std::size_t>(family)];
}

PluginFamily family_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kPluginFamilyNames.size(); ++i)
    if (kPluginFamilyNames[i] == name) return static_cast<PluginFamily>(i);
  throw Error(fmt::format("unknown plugin family '{}' (families: {})", name,
                          fmt::join(kPluginFamilyNames, ", ")));
}

}  // namespace attnlab
