// Run manifests compared: what differs is named by its dotted path, the step, the time and the
// configuration never count, and a row's own settings exempt the parts of the manifest they change.
#include <doctest/doctest.h>

#include "attnlab/error.h"
#include "attnlab/nmt/train/manifest.h"

using namespace attnlab;
using namespace attnlab::nmt;

TEST_CASE("manifest differences are named by path, outside step, time, configuration and exemptions") {
  const std::string a = R"({"step": 0, "written_at": "t1", "config": "x = 1",
    "attnlab": {"version": "0.1.0", "git": "abc"},
    "plugins": {"positional": {"name": "sinusoidal", "hash": "11"}},
    "machine": {"host": "a", "threads": 2}})";
  const std::string b = R"({"step": 40, "written_at": "t2", "config": "x = 2",
    "attnlab": {"version": "0.1.0", "git": "def"},
    "plugins": {"positional": {"name": "rope", "hash": "22"}},
    "machine": {"host": "a", "threads": 2, "gpu": "H200"}})";
  const auto all = manifest_differences(a, b);
  // The first manifest's paths in order, then those only the second has.
  CHECK(all == std::vector<std::string>{"attnlab.git: \"abc\" vs \"def\"", "plugins.positional.hash: \"11\" vs \"22\"",
                                        "plugins.positional.name: \"sinusoidal\" vs \"rope\"",
                                        "machine.gpu: (missing) vs \"H200\""});
  CHECK(manifest_differences(a, b, {"plugins.positional", "machine", "attnlab"}).empty());
  CHECK(manifest_differences(a, a).empty());
  CHECK_THROWS_WITH_AS(manifest_differences("[1, 2]", b), doctest::Contains("manifest: not a JSON object"), Error);
}

TEST_CASE("a row's settings exempt the manifest parts they change") {
  CHECK(row_manifest_exemptions({"model.positional.name", "model.d_ff"}) == std::vector<std::string>{"plugins.positional"});
  CHECK(row_manifest_exemptions({"model.attention.name", "model.dropout_plugin.steps"}) ==
        std::vector<std::string>{"plugins.attention", "plugins.dropout"});
  CHECK(row_manifest_exemptions({"vocab.size"}) == std::vector<std::string>{"data", "vocabulary"});
  CHECK(row_manifest_exemptions({"experiment.threads"}) == std::vector<std::string>{"machine"});
  CHECK(row_manifest_exemptions({"training.max_steps"}).empty());
}
