// ConfigError: bad input, reported to the user as "file:line:column: what is wrong; what to do"
// and exit code 2 (see docs/cli.md).
#pragma once

#include <stdexcept>
#include <string>

namespace memsweep::config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace memsweep::config
