// Command-line overrides of experiment keys: `--set section.key=value` applied to a parsed TOML
// document before validation. The value is TOML (`3`, `1e-3`, `"2GiB"`, `[1, 2]`); a bare word
// is taken as a string. Dotted keys may reach nested tables (`strategies.precision.plugin=bf16`)
// and list entries, by index or plugin (`strategies.callbacks.empty_cache.every=5`; dotted_keys.h).
//
//   toml::table root = toml::parse_file(path);
//   ApplyOverride(root, "strategies.batching.seq_len=128");
#pragma once

#include <toml++/toml.h>

#include <string>

namespace memsweep::config {

// Throws ConfigError when the assignment is malformed.
void ApplyOverride(toml::table& root, const std::string& assignment);

}  // namespace memsweep::config
