// The loader against real plugin libraries built as fixtures (tests/fixtures).
#include <doctest/doctest.h>

#include "attnlab/build_info.h"
#include "attnlab/plugin/loader.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/version.h"

using namespace attnlab;

namespace {
std::string fixture(const std::string& name) {
  return std::string(ATTNLAB_TEST_FIXTURE_DIR) + "/attnlab_fixture_" + name + ".so";
}
doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }
}  // namespace

TEST_CASE("a good plugin loads and registers with its file as source") {
  Registry registry;
  PluginLoader loader(registry);
  const LoadedLibrary lib = loader.load(fixture("good"));
  CHECK(lib.name == "good");
  CHECK(lib.version == "0.1.0");
  CHECK(lib.build_id == core_build_id());
  const PluginInfo& info = registry.find(PluginFamily::positional, "fixture_shift");
  CHECK(info.source == lib.path);
  CHECK(info.options.size() == 1);
  // Loading the same file again is a no-op, not a duplicate.
  loader.load(fixture("good"));
  CHECK(registry.list(PluginFamily::positional).size() == 1);
}

TEST_CASE("a wrong ABI version is refused before registration with both versions named") {
  Registry registry;
  PluginLoader loader(registry);
  CHECK_THROWS_WITH_AS(loader.load(fixture("wrong_abi")),
                       contains(fmt::format("attnlab_fixture_wrong_abi.so: plugin ABI version 999 but "
                                                     "this attnlab ({}) uses ABI version {}",
                                                     ATTNLAB_VERSION_STRING, ATTNLAB_PLUGIN_ABI_VERSION)),
                       Error);
  CHECK(registry.list().empty());
}

TEST_CASE("a plugin built against the previous ABI version is refused with both versions named") {
  static_assert(ATTNLAB_PLUGIN_ABI_VERSION == 6u, "the old_abi fixture claims the version before this one");
  Registry registry;
  PluginLoader loader(registry);
  CHECK_THROWS_WITH_AS(loader.load(fixture("old_abi")),
                       contains(fmt::format("attnlab_fixture_old_abi.so: plugin ABI version 5 but this attnlab ({}) "
                                            "uses ABI version 6; rebuild the plugin against this attnlab",
                                            ATTNLAB_VERSION_STRING)),
                       Error);
  CHECK(registry.list().empty());
}

TEST_CASE("a plugin built against another core is refused with both build ids named") {
  Registry registry;
  PluginLoader loader(registry);
  CHECK_THROWS_WITH_AS(
      loader.load(fixture("stale_build")),
      contains(fmt::format("plugin build id 'gcc-9.9;libstdc++-cxx11abi1;cuda-none;headers-0123456789abcdef', "
                                    "core build id '{}'",
                                    core_build_id())),
      Error);
  CHECK(registry.list().empty());
}

TEST_CASE("a library without the entry point is refused") {
  Registry registry;
  PluginLoader loader(registry);
  CHECK_THROWS_WITH_AS(loader.load(fixture("no_entry")),
                       doctest::Contains("attnlab_fixture_no_entry.so is not an attnlab plugin: it exports no "
                                         "'attnlab_plugin_entry' entry point"),
                       Error);
  CHECK_THROWS_WITH_AS(loader.load(fixture("does_not_exist")), doctest::Contains("does not exist"), Error);
}

TEST_CASE("two libraries registering the same name are refused naming both files") {
  Registry registry;
  PluginLoader loader(registry);
  loader.load(fixture("twin_a"));
  CHECK_THROWS_WITH_AS(loader.load(fixture("twin_b")),
                       contains("positional plugin 'fixture_twin' is registered twice: by " +
                                         fixture("twin_a") + " and by " + fixture("twin_b")),
                       Error);
}

TEST_CASE("an unknown name lists the plugins of its family by name, with the closest one") {
  Registry registry;
  PluginLoader loader(registry);
  loader.load(fixture("good"));
  CHECK_THROWS_WITH_AS(registry.find(PluginFamily::positional, "sinusodial"),
                       contains("unknown positional plugin 'sinusodial' (valid: fixture_shift)"), Error);
  CHECK_THROWS_WITH_AS(registry.find(PluginFamily::positional, "fixture-shift"),
                       contains("unknown positional plugin 'fixture-shift' (valid: fixture_shift); did you mean "
                                "'fixture_shift'?"),
                       Error);
  CHECK_THROWS_WITH_AS(registry.find(PluginFamily::ffn, "relu"),
                       doctest::Contains("unknown ffn plugin 'relu': no ffn plugins are loaded"), Error);
}

TEST_CASE("load_all finds the in-tree plugins on ATTNLAB_PLUGIN_PATH and keeps going past bad files") {
  Registry registry;
  PluginLoader loader(registry);
  loader.add_search_path(ATTNLAB_TEST_PLUGIN_DIR);
  loader.add_search_path(ATTNLAB_TEST_FIXTURE_DIR);
  loader.load_all();
  for (const char* name : {"scaled_dot", "additive"}) CHECK(registry.contains(PluginFamily::attention, name));
  for (const char* name : {"sinusoidal", "learned", "none", "fixture_shift"})
    CHECK(registry.contains(PluginFamily::positional, name));
  for (const char* name : {"relu", "gelu", "swiglu"}) CHECK(registry.contains(PluginFamily::ffn, name));
  CHECK(registry.contains(PluginFamily::dropout, "standard"));
  for (const char* name : {"layer_norm", "rms_norm"}) CHECK(registry.contains(PluginFamily::norm, name));
  // wrong_abi, old_abi, stale_build, no_entry and twin_b fail; their errors are kept, the rest loads.
  CHECK(loader.failures().size() == 5);
}
