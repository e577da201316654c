#pragma once
// The binary interface between attnlab and a plugin library.
//
// A plugin library exports ONE C symbol, `attnlab_plugin_entry`, returning a pointer to a plain
// struct whose first field is the ABI version. The loader reads and checks the ABI version and
// the build id before any C++ object crosses the boundary; only then does it call `register_fn`
// with the registry. Libraries are never unloaded.
//
// Write a plugin with the ATTNLAB_PLUGIN macro:
//
//   static void register_my_plugins(attnlab::Registry& registry) { registry.add_attention(...); }
//   ATTNLAB_PLUGIN("my_attention", "1.0.0", "what it does", register_my_plugins)
#include <cstdint>

#include "attnlab/build_info.h"

// Bump when attnlab_plugin_entry_t or the meaning of its fields changes, including what
// register_fn is given to fill in (version 2: PluginInfo carries the attention capabilities;
// version 3: positions inside attention, dropout sites and the step in the build context;
// version 4: the norm family and the norms' epsilon in the build context; version 5: position
// terms in kernel form; version 6: an attention plugin's per-device kernel report).
#define ATTNLAB_PLUGIN_ABI_VERSION 6u
#define ATTNLAB_PLUGIN_ENTRY_SYMBOL "attnlab_plugin_entry"

extern "C" {
struct attnlab_plugin_entry_t {
  std::uint32_t abi_version;  // ATTNLAB_PLUGIN_ABI_VERSION when the plugin was built
  const char* name;           // the library's name (one library may register several plugins)
  const char* version;
  const char* build_id;       // ATTNLAB_BUILD_ID when the plugin was built
  const char* description;
  void (*register_fn)(void* registry);  // receives an attnlab::Registry*
};
}

#ifndef ATTNLAB_PLUGIN_BUILD_ID
#define ATTNLAB_PLUGIN_BUILD_ID ATTNLAB_BUILD_ID
#endif

#define ATTNLAB_PLUGIN(NAME, VERSION, DESCRIPTION, REGISTER)                               \
  extern "C" __attribute__((visibility("default"))) const attnlab_plugin_entry_t*          \
  attnlab_plugin_entry() {                                                                 \
    static const attnlab_plugin_entry_t entry{                                             \
        ATTNLAB_PLUGIN_ABI_VERSION, NAME, VERSION, ATTNLAB_PLUGIN_BUILD_ID, DESCRIPTION,   \
        [](void* registry) { REGISTER(*static_cast<::attnlab::Registry*>(registry)); }};   \
    return &entry;                                                                         \
  }
