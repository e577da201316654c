#pragma once
// The plugin families: the interchangeable parts of the Transformer.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attnlab {

enum class PluginFamily : std::uint8_t { attention, positional, ffn, dropout, norm };
inline constexpr std::array<std::string_view, 5> kPluginFamilyNames = {"attention", "positional", "ffn", "dropout",
                                                                      "norm"};
static_assert(kPluginFamilyNames.size() == static_cast<std::size_t>(PluginFamily::norm) + 1);

std::string_view family_name(PluginFamily family);
// Throws an Error listing the families for an unknown name.
PluginFamily family_from_name(std::string_view name);

}  // namespace attnlab
