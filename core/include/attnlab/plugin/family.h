#pragma once
// The plugin families: the interchangeable parts of the Transformer.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnlab/name_table.h"

namespace attnlab {

enum class PluginFamily : std::uint8_t { attention, positional, ffn, dropout, norm };
inline constexpr auto kPluginFamilies = name_table<PluginFamily>("plugin family", {{PluginFamily::attention, "attention"},
                                                                                 {PluginFamily::positional, "positional"},
                                                                                 {PluginFamily::ffn, "ffn"},
                                                                                 {PluginFamily::dropout, "dropout"},
                                                                                 {PluginFamily::norm, "norm"}});

std::string_view family_name(PluginFamily family);
// Throws an Error listing the families for an unknown name.
PluginFamily family_from_name(std::string_view name);

}  // namespace attnlab
