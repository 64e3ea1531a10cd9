// Dotted keys ("strategies.batching.micro_batch_size", "strategies.precision.plugin") as paths
// into a TOML document: looking a value up, and assigning one while creating the tables on the
// way. The one walk behind --set overrides, [matrix] keys, include entries and ablation steps.
//
// A part that follows a list picks one of its entries, by index from 0 or, for a list of tables,
// by the entry's `plugin`: with
//   [[strategies.callbacks]]
//   plugin = "empty_cache"
// both "strategies.callbacks.0.every" and "strategies.callbacks.empty_cache.every" name its
// `every` (an index wins over a plugin named like a number; two entries with the same plugin must
// be named by index).
//
//   if (const toml::node* n = FindAtPath(root, "strategies.batching.seq_len")) ...
//   AssignAtPath(root, "strategies.precision.plugin", std::move(node), key_region, source);
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <vector>

namespace memsweep::config {

std::vector<std::string> SplitDottedKey(std::string_view dotted);
// True when `key` is `prefix` itself or lies inside it ("data.path" is under "data").
bool IsUnder(std::string_view key, std::string_view prefix);
// The node at `dotted`, or nullptr when a part is missing, names no list entry, or follows a
// value that is neither a table nor a list.
const toml::node* FindAtPath(const toml::table& root, std::string_view dotted);
toml::node* FindAtPath(toml::table& root, std::string_view dotted);
// Replaces (or inserts) the value at `dotted`, moving `value` so that it keeps its source
// position; missing tables on the way are created (list entries are not: they must exist), and
// new keys carry `key_region` so that messages about them point at the line that asked for them.
// Throws ConfigError ("file:line:column: cannot set '<dotted>': ...", the position of
// `key_region` in `source`) when a part on the way holds a value that is not a table, or names no
// entry of a list: then the message gives the list's file and line and its entries.
void AssignAtPath(toml::table& root, std::string_view dotted, toml::node&& value,
                  const toml::source_region& key_region, const std::string& source);
// `dotted` with every list entry named by its plugin written as its index
// ("strategies.callbacks.empty_cache.every" -> "strategies.callbacks.0.every"), so that two
// spellings of one key compare equal; parts that resolve to nothing are kept as written.
std::string CanonicalKey(const toml::table& root, std::string_view dotted);
// True when one key is the other or lies inside it, however each names list entries:
// IsUnder either way on their CanonicalKey.
bool KeysOverlap(const toml::table& root, std::string_view a, std::string_view b);

}  // namespace memsweep::config
