#pragma once
// The subcommands of the attnlab program; each returns the process exit code.
#include <string>
#include <vector>

#include "attnlab/plugin/registry.h"

namespace attnlab::app {

using Args = std::vector<std::string>;

int command_plugins(const Args& args);
int command_train(const Args& args);
int command_translate(const Args& args);
int command_score(const Args& args);
int command_average(const Args& args);

// Loads every plugin on the search path (plus extra folders) into the global registry; plugins
// that fail to load are reported on stderr.
const Registry& load_plugins(const std::vector<std::string>& extra_paths = {});

// Reads the lines of a file, or of standard input for "-".
std::vector<std::string> read_text_lines(const std::string& path);
int command_data(const Args& args);
int data_batches(const Args& args);  // attnlab data batches
int command_bleu(const Args& args);
int command_eval(const Args& args);
int command_run(const Args& args);
int command_check(const Args& args);
int command_report(const Args& args);
int command_status(const Args& args);

}  // namespace attnlab::app
