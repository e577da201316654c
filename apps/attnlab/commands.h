#pragma once
// The subcommands of the attnlab program; each returns the process exit code.
#include <string>
#include <vector>

namespace attnlab::app {

using Args = std::vector<std::string>;

int command_plugins(const Args& args);
int command_train(const Args& args);
int command_data(const Args& args);
int command_bleu(const Args& args);

}  // namespace attnlab::app
