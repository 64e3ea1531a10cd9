#include "core/config/toml_overrides.h"

#include "core/config/config_error.h"
#include "core/config/dotted_keys.h"

namespace memsweep::config {

// Applies "section.key=value" on top of the parsed file.
void ApplyOverride(toml::table& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + assignment + ": expected section.key=value");
  }
  const std::string dotted = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  if (dotted.find('.') == std::string::npos) {
    throw ConfigError("--set " + assignment +
                      ": the key must name its section, e.g. strategies.batching.seq_len=128");
  }
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + value, std::string_view("--set " + dotted));
  } catch (const toml::parse_error&) {
    parsed = toml::table{{"v", value}};  // a bare word: take it as a string
  }
  // A copy, which has no file position: messages about the value name the experiment file.
  toml::table copy = parsed;
  AssignAtPath(root, dotted, std::move(*copy.get("v")), {}, "--set " + assignment);
}

}  // namespace memsweep::config
