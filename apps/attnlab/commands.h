#pragma once
// What the subcommands share besides the command line (cli.h): the plugin registry and text input.
#include <string>
#include <vector>

#include "attnlab/cli.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::app {

// Loads every plugin on the search path (plus extra folders) into the global registry; plugins
// that fail to load are reported on stderr.
const Registry& load_plugins(const std::vector<std::string>& extra_paths = {});

// Loads the plugins of every row of a suite (their plugin_paths, each folder once) and applies the
// rows' `unsupported` choice (row_policy.h): rows the plugins cannot serve are skipped, or the
// suite is refused. What `check`, `run` and `run --slurm` start from.
const Registry& load_suite_plugins(nmt::Suite& suite);

// Reads the lines of a file, or of standard input for "-".
std::vector<std::string> read_text_lines(const std::string& path);

}  // namespace attnlab::app
