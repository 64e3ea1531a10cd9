// ScopedEnv: sets (or, with nullptr, removes) an environment variable for its lifetime, then
// puts back what was there.
//
//   ScopedEnv cache("XDG_CACHE_HOME", dir.c_str());
#pragma once

#include <cstdlib>
#include <string>

namespace memsweep::testing_support {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    had_ = before != nullptr;
    if (had_) saved_ = before;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), saved_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string saved_;
};

}  // namespace memsweep::testing_support
