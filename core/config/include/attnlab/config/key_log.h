#pragma once
// The keys a reading asks for, as the reader asks for them: while a KeyLog is alive on a thread,
// every TableReader of that thread records each key it is asked for (its dotted path, the type it
// reads it as and the default it falls back to). The list of keys of an experiment file is made
// this way from the reader itself (nmt/experiment: experiment_keys), so it cannot drift from it.
#include <string>
#include <vector>

namespace attnlab::config {

struct KeyRecord {
  std::string path;           // "training.max_steps"
  std::string type;           // "integer", "number", "boolean", "string", "array of strings", "table"; "" unknown
  std::string default_value;  // as TOML writes it ("4000", "\"adam\"", "[]"); "" none
};

class KeyLog {
 public:
  KeyLog();
  ~KeyLog();
  KeyLog(const KeyLog&) = delete;
  KeyLog& operator=(const KeyLog&) = delete;
  // In the order first asked; a key asked again keeps its first type and default (a later
  // reading fills them in where the first did not know them: has() before a get).
  const std::vector<KeyRecord>& records() const { return records_; }

  // Whether a log is alive on this thread (TableReader asks before it writes out a default).
  static bool recording();
  // Called by TableReader and the readers of raw values: records the key when a log is alive on this
  // thread.
  static void note(const std::string& path, const std::string& type, const std::string& default_value);

 private:
  std::vector<KeyRecord> records_;
  KeyLog* outer_;
};

}  // namespace attnlab::config
