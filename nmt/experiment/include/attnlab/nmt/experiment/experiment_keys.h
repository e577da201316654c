#pragma once
// Every key an experiment file takes (`attnlab config --keys`, docs/keys.md): made by reading a
// probe experiment that holds every table with the reader's key log on (config/key_log.h), so the
// keys, their types and their defaults are the reader's own; each key's meaning comes from one
// catalog beside it, which must name exactly the keys the reader asks for (a key without a meaning,
// or a meaning without a key, is an error that the tests reach).
#include <span>
#include <string>
#include <vector>

#include "attnlab/config/key_log.h"

namespace attnlab::nmt {

struct ExperimentKey {
  std::string path;           // "training.max_steps"; a table of the user's naming is written NAME
  std::string type;           // "integer", "number", "boolean", "string", "array of strings", "table", ...
  std::string default_value;  // as TOML writes it; "" none (the meaning says what happens without it)
  std::string meaning;
};

std::vector<ExperimentKey> experiment_keys();

// What a key means, in a catalog beside a reader; `type` and `fallback` only where the reader
// cannot say (a key read only when present, or read elsewhere), and with `replace` instead of
// the reader's default (where the reader falls back to a stand-in that the meaning explains).
struct KeyMeaning {
  const char* path;
  const char* meaning;
  const char* type = "";
  const char* fallback = "";
  bool replace = false;
};
// The keys of `records` that `take` takes (every one without it), each with its meaning from
// `catalog`, which must name exactly those keys: a key without a meaning, or a meaning without a
// key, is an Error naming `what` ("experiment keys").
std::vector<ExperimentKey> with_meanings(const std::vector<config::KeyRecord>& records,
                                         std::span<const KeyMeaning> catalog, const char* what,
                                         bool (*take)(const std::string&) = nullptr);

// The list as text: one line per key ("path  type  default  meaning", aligned), or as a Markdown
// table (`markdown`).
std::string render_experiment_keys(const std::vector<ExperimentKey>& keys, bool markdown);

}  // namespace attnlab::nmt
