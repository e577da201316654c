#pragma once
// Reads one TOML table of an experiment file with strict checking: every key must be known,
// every value of the expected type, and every mistake is reported as
//   file:line:column: dotted.key: what was expected (valid keys: ...; did you mean '...'?)
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace attnlab::config {

class TableReader {
 public:
  // `where` is the table's dotted key ("training"); empty for the document root.
  TableReader(const toml::table& table, std::string where);

  // Whether the table has `key`; asking makes it a known key (it is in the lists of valid keys).
  bool has(const std::string& key) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback);
  double get_real(const std::string& key, double fallback);  // integers accepted
  bool get_bool(const std::string& key, bool fallback);
  std::string get_string(const std::string& key, const std::string& fallback);
  std::vector<std::string> get_strings(const std::string& key);
  std::string require_string(const std::string& key);
  // A sub-table (marked as known); nullopt when absent. A non-table value is an error.
  std::optional<TableReader> table(const std::string& key);
  // Marks keys as known without reading them (a table handled elsewhere).
  void accept(const std::string& key);
  // Throws for the first key that was never read or accepted, listing the valid ones.
  void finish() const;

  const toml::table& raw() const { return *table_; }
  std::string path(const std::string& key) const;  // "where.key"
  std::string position(const std::string& key) const;  // file:line:column of the key's value
  std::string position() const;                         // of the table

 private:
  const toml::node* node(const std::string& key);
  [[noreturn]] void type_error(const std::string& key, const char* expected) const;

  const toml::table* table_;
  std::string where_;
  mutable std::set<std::string> known_;  // keys read, asked about (has) or accepted
};

}  // namespace attnlab::config
