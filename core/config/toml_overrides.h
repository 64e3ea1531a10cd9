// Command-line overrides of experiment keys: `--set section.key=value` applied to a parsed TOML
// document before validation. The value is TOML (`3`, `1e-3`, `"2GiB"`, `[1, 2]`); a bare word
// is taken as a string. Dotted keys may reach nested tables (`strategies.precision.plugin=bf16`).
//
//   toml::table root = toml::parse_file(path);
//   ApplyOverride(root, "data.seq_len=128");
#pragma once

#include <toml++/toml.h>

#include <string>

namespace memsweep::config {

// Throws ConfigError when the assignment is malformed.
void ApplyOverride(toml::table& root, const std::string& assignment);

}  // namespace memsweep::config
