#pragma once
// Reading [model.attention]'s score expressions (experiment_expressions.cpp).
#include <string>
#include <vector>

#include "attnlab/config/table_reader.h"
#include "attnlab/nmt/model/model_config.h"

namespace attnlab::nmt {

// The keys of [model.attention] that belong to the expressions, not to the plugin's options.
const std::vector<std::string>& expression_keys();

// Reads them into m.expressions (m.dims already read) and builds every site's, so that a mistake is
// an Error at its place before anything runs.
void read_attention_expressions(config::TableReader& model, TransformerConfig& m);

}  // namespace attnlab::nmt
