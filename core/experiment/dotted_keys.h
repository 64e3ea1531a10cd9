// Dotted keys ("data.micro_batch_size", "strategies.precision.plugin") as paths into a TOML
// document: looking a value up, and assigning one while creating the tables on the way.
//
//   if (const toml::node* n = FindAtPath(root, "data.seq_len")) ...
//   AssignAtPath(root, "strategies.precision.plugin", std::move(node), key_region, source);
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <vector>

namespace memsweep::experiment {

std::vector<std::string> SplitDottedKey(std::string_view dotted);
// True when `key` is `prefix` itself or lies inside it ("data.seq_len" is under "data").
bool IsUnder(std::string_view key, std::string_view prefix);
// The node at `dotted`, or nullptr when a part is missing or not a table.
const toml::node* FindAtPath(const toml::table& root, const std::string& dotted);
toml::node* FindAtPath(toml::table& root, const std::string& dotted);
// Replaces (or inserts) the value at `dotted`, moving `value` so that it keeps its source
// position; missing tables on the way are created, and new keys carry `key_region` so that
// messages about them point at the line that asked for them. Throws config::ConfigError
// ("file:line:column: ...") when a part on the way holds a value that is not a table.
void AssignAtPath(toml::table& root, const std::string& dotted, toml::node&& value,
                  const toml::source_region& key_region, const std::string& source);
// Removes the value at `dotted` (no-op when absent).
void EraseAtPath(toml::table& root, const std::string& dotted);

}  // namespace memsweep::experiment
