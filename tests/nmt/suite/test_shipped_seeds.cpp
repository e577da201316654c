// The shipped three-seed suite of the Multi30k recipe (experiments/multi30k-seeds.toml): the
// recipe itself, once per seed, each run its own.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/suite/suite.h"

using namespace attnlab::nmt;

TEST_CASE("the three-seed Multi30k suite trains the recipe as it is, seeds 1-3, one run after the other") {
  const std::string dir = ATTNLAB_TEST_EXPERIMENTS_DIR;
  const ExperimentConfig recipe = load_experiment(dir + "/multi30k.toml");
  const Suite s = load_suite(dir + "/multi30k-seeds.toml");
  CHECK_FALSE(s.search.has_value());
  REQUIRE(s.rows.size() == 3);
  std::set<std::string> folders;
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const SuiteRow& row = s.rows[i];
    CAPTURE(row.name);
    CHECK(row.seed == i + 1);
    CHECK(row.config.seed == i + 1);
    CHECK(row.same_as.empty());
    CHECK(row.settings.empty());
    folders.insert(row.config.run_dir);
    // Everything but the name, the seed and the folders is the recipe's: its threads (each run has
    // the cores to itself, so its training time is the recipe's) and every setting.
    ExperimentConfig c = row.config;
    c.name = recipe.name, c.seed = recipe.seed, c.run_dir = recipe.run_dir, c.source_file = recipe.source_file;
    c.data.cache_dir = recipe.data.cache_dir;  // the suite's, shared by its rows
    CHECK(c.threads == recipe.threads);
    CHECK(to_toml(c) == to_toml(recipe));
  }
  CHECK(folders.size() == 3);
}
