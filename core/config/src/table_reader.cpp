#include "attnlab/config/table_reader.h"

#include "attnlab/config/key_log.h"
#include "attnlab/config/plugin_options.h"
#include "attnlab/error.h"

namespace attnlab::config {
namespace {

// Records key `key` of `t` in the key log when one is alive on this thread; its path and default
// are written out only then (`fallback` gives the default), so reading a file without a log does
// no more than before.
template <typename Fallback>
void log_key(const TableReader& t, const std::string& key, const char* type, Fallback fallback) {
  if (KeyLog::recording()) KeyLog::note(t.path(key), type, fallback());
}
std::string none() { return {}; }

}  // namespace

TableReader::TableReader(const toml::table& table, std::string where)
    : table_(&table), where_(std::move(where)) {}

std::string TableReader::path(const std::string& key) const { return where_.empty() ? key : where_ + "." + key; }

std::string TableReader::position(const std::string& key) const {
  const toml::node* n = table_->get(key);
  return source_position(n ? n->source() : table_->source());
}

std::string TableReader::position() const { return source_position(table_->source()); }

bool TableReader::has(const std::string& key) const {
  known_.insert(key);
  log_key(*this, key, "", none);
  return table_->contains(key);
}

const toml::node* TableReader::node(const std::string& key) {
  known_.insert(key);
  return table_->get(key);
}

void TableReader::type_error(const std::string& key, const char* expected) const {
  const toml::node* n = table_->get(key);
  throw Error(fmt::format("{}: {}: expected {}, got {}", position(key), path(key), expected,
                          n ? value_with_type(*n) : std::string("nothing")));
}

std::int64_t TableReader::get_int(const std::string& key, std::int64_t fallback) {
  log_key(*this, key, "integer", [&] { return fmt::format("{}", fallback); });
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (auto v = n->value_exact<std::int64_t>()) return *v;
  type_error(key, "an integer");
}

double TableReader::get_real(const std::string& key, double fallback) {
  log_key(*this, key, "number", [&] { return fmt::format("{}", fallback); });
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (auto v = n->value_exact<double>()) return *v;
  if (auto v = n->value_exact<std::int64_t>()) return static_cast<double>(*v);
  type_error(key, "a number");
}

bool TableReader::get_bool(const std::string& key, bool fallback) {
  log_key(*this, key, "boolean", [&] { return std::string(fallback ? "true" : "false"); });
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (auto v = n->value_exact<bool>()) return *v;
  type_error(key, "true or false");
}

std::string TableReader::get_string(const std::string& key, const std::string& fallback) {
  log_key(*this, key, "string", [&] { return fallback.empty() ? std::string() : fmt::format("\"{}\"", fallback); });
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (auto v = n->value_exact<std::string>()) return *v;
  type_error(key, "a string");
}

std::vector<std::string> TableReader::get_strings(const std::string& key) {
  log_key(*this, key, "array of strings", [] { return std::string("[]"); });
  const toml::node* n = node(key);
  std::vector<std::string> out;
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) type_error(key, "an array of strings");
  for (const auto& item : *arr) {
    auto v = item.value_exact<std::string>();
    if (!v) throw Error(fmt::format("{}: {}: expected an array of strings", source_position(item.source()), path(key)));
    out.push_back(*v);
  }
  return out;
}

std::string TableReader::require_string(const std::string& key) {
  if (!has(key)) throw Error(fmt::format("{}: {}: missing required key '{}'", position(), where_.empty() ? "(top level)" : where_, key));
  return get_string(key, "");
}

std::optional<TableReader> TableReader::table(const std::string& key) {
  log_key(*this, key, "table", none);
  const toml::node* n = node(key);
  if (!n) return std::nullopt;
  const toml::table* t = n->as_table();
  if (!t) type_error(key, "a table");
  return TableReader(*t, path(key));
}

void TableReader::accept(const std::string& key) {
  known_.insert(key);
  log_key(*this, key, "", none);
}

void TableReader::finish() const {
  for (const auto& [key, value] : *table_) {
    const std::string name(key.str());
    if (known_.count(name)) continue;
    std::vector<std::string> valid(known_.begin(), known_.end());
    throw Error(fmt::format("{}: {}: unknown key (valid keys here: {}){}", source_position(key.source()), path(name),
                            valid.empty() ? std::string("none") : fmt::format("{}", fmt::join(valid, ", ")),
                            did_you_mean(name, valid)));
  }
}

}  // namespace attnlab::config
