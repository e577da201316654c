#pragma once
// Sets (or unsets) environment variables for a scope and restores what was there when it ends,
// also after a failed check: for tests of switches read from the environment, which a tool may
// already have set for the whole test run (tools/test_every_kernel.sh).
#include <cstdlib>
#include <string>
#include <vector>

namespace attnlab::testing {

class EnvScope {
 public:
  // value nullptr unsets the variable.
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old != nullptr, old != nullptr ? old : ""});
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~EnvScope() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had) ::setenv(it->name.c_str(), it->value.c_str(), 1);
      else ::unsetenv(it->name.c_str());
    }
  }

 private:
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

}  // namespace attnlab::testing
