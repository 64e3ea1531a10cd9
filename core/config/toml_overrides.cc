#include "core/config/toml_overrides.h"

#include "core/config/config_error.h"

namespace memsweep::config {

// Applies "section.key=value" on top of the parsed file.
void ApplyOverride(toml::table& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + assignment + ": expected section.key=value");
  }
  const std::string dotted = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  const auto dot = dotted.rfind('.');
  if (dot == std::string::npos) {
    throw ConfigError("--set " + assignment + ": the key must name its section, e.g. data.seq_len");
  }
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + value, std::string_view("--set " + dotted));
  } catch (const toml::parse_error&) {
    parsed = toml::table{{"v", value}};  // a bare word: take it as a string
  }
  toml::table* table = &root;
  std::string_view rest(dotted.data(), dot);
  while (!rest.empty()) {
    const auto next = rest.find('.');
    const std::string part(rest.substr(0, next));
    auto [it, inserted] = table->insert(part, toml::table{});
    if (!it->second.is_table()) {
      throw ConfigError("--set " + assignment + ": '" + part + "' is not a table");
    }
    table = it->second.as_table();
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  }
  table->insert_or_assign(dotted.substr(dot + 1), *parsed.get("v"));
}

}  // namespace memsweep::config
