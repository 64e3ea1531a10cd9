#include "core/config/dotted_keys.h"

#include <optional>

#include "core/config/config_error.h"
#include "core/config/toml_reader.h"

namespace memsweep::config {
namespace {

bool IsIndex(std::string_view part) {
  return !part.empty() && part.size() <= 9 && part.find_first_not_of("0123456789") == part.npos;
}

// The `plugin` of a list entry, or nullptr when the entry is not a table with a string plugin.
const std::string* PluginOf(const toml::node& entry) {
  const toml::table* table = entry.as_table();
  if (table == nullptr) return nullptr;
  const toml::node* plugin = table->get("plugin");
  return plugin != nullptr && plugin->is_string() ? &plugin->as_string()->get() : nullptr;
}

// The entry of `list` that `part` names: an index below its size, or the plugin of exactly one of
// its tables.
std::optional<size_t> EntryIndex(const toml::array& list, std::string_view part) {
  if (IsIndex(part)) {
    const size_t index = std::stoul(std::string(part));
    return index < list.size() ? std::optional<size_t>(index) : std::nullopt;
  }
  std::optional<size_t> found;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string* plugin = PluginOf(*list.get(i));
    if (plugin == nullptr || *plugin != part) continue;
    if (found) return std::nullopt;  // two entries with this plugin: only an index names one
    found = i;
  }
  return found;
}

// Why `part` names no entry of the list at `walked`, with the list's file and line and the
// entries there are.
std::string EntryProblem(const toml::array& list, const std::string& walked,
                         std::string_view part) {
  const toml::source_region& region = list.source();
  std::string subject = "'" + walked + "'";
  if (region.path && !region.path->empty() && region.begin.line > 0) {
    subject += " (" + *region.path + ":" + std::to_string(region.begin.line) + ")";
  }
  if (list.empty()) {
    return subject + " is an empty list, without an entry '" + std::string(part) +
           "'; add the entry to the list, or set the whole list";
  }
  std::string entries;
  std::string same_plugin;
  bool plugins = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string* plugin = PluginOf(*list.get(i));
    plugins = plugins || plugin != nullptr;
    entries += (i == 0 ? "" : ", ") + std::to_string(i) + (plugin ? " (" + *plugin + ")" : "");
    if (plugin != nullptr && *plugin == part) {
      same_plugin += (same_plugin.empty() ? "" : " or ") + std::to_string(i);
    }
  }
  if (same_plugin.find(" or ") != std::string::npos) {
    return subject + " has several entries with plugin \"" + std::string(part) +
           "\": name one by its index (" + same_plugin + ")";
  }
  const std::string indices =
      list.size() == 1 ? "0" : "0 to " + std::to_string(list.size() - 1);
  if (!plugins) {
    return subject + " has no entry '" + std::string(part) + "': name one by its index, " +
           indices;
  }
  return subject + " has no entry '" + std::string(part) + "'; its entries are " + entries +
         ": name one by its index (" + indices + ") or by its plugin";
}

// The node `part` names inside `at` (a table's key or a list's entry), or nullptr.
const toml::node* Step(const toml::node& at, std::string_view part) {
  if (const toml::table* table = at.as_table()) return table->get(part);
  if (const toml::array* list = at.as_array()) {
    const std::optional<size_t> index = EntryIndex(*list, part);
    return index ? list->get(*index) : nullptr;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> SplitDottedKey(std::string_view dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    parts.emplace_back(dotted.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

bool IsUnder(std::string_view key, std::string_view prefix) {
  if (key.size() < prefix.size() || key.substr(0, prefix.size()) != prefix) return false;
  return key.size() == prefix.size() || key[prefix.size()] == '.';
}

const toml::node* FindAtPath(const toml::table& root, std::string_view dotted) {
  const toml::node* node = &root;
  for (const std::string& part : SplitDottedKey(dotted)) {
    node = Step(*node, part);
    if (node == nullptr) return nullptr;
  }
  return node;
}

toml::node* FindAtPath(toml::table& root, std::string_view dotted) {
  return const_cast<toml::node*>(FindAtPath(static_cast<const toml::table&>(root), dotted));
}

void AssignAtPath(toml::table& root, std::string_view dotted, toml::node&& value,
                  const toml::source_region& key_region, const std::string& source) {
  const std::vector<std::string> parts = SplitDottedKey(dotted);
  const auto fail = [&](const std::string& problem) {
    throw ConfigError(Where(source, key_region) + "cannot set '" + std::string(dotted) + "': " +
                      problem);
  };
  toml::node* at = &root;
  std::string walked;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (toml::table* table = at->as_table()) {
      if (last) {
        table->insert_or_assign(toml::key(parts[i], key_region), std::move(value));
        return;
      }
      at = &table->insert(toml::key(parts[i], key_region), toml::table{}).first->second;
    } else if (toml::array* list = at->as_array()) {
      const std::optional<size_t> index = EntryIndex(*list, parts[i]);
      if (!index) fail(EntryProblem(*list, walked, parts[i]));
      if (last) {
        list->replace(list->cbegin() + static_cast<std::ptrdiff_t>(*index), std::move(value));
        return;
      }
      at = list->get(*index);
    } else {
      fail("'" + walked + "' is a value, not a table; change the key");
    }
    walked += (i == 0 ? "" : ".") + parts[i];
  }
}

std::string CanonicalKey(const toml::table& root, std::string_view dotted) {
  std::string canonical;
  const toml::node* at = &root;
  const std::vector<std::string> parts = SplitDottedKey(dotted);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string written = parts[i];
    if (at != nullptr && at->is_array()) {
      const std::optional<size_t> index = EntryIndex(*at->as_array(), parts[i]);
      if (index) written = std::to_string(*index);
    }
    at = at != nullptr ? Step(*at, parts[i]) : nullptr;
    canonical += (i == 0 ? "" : ".") + written;
  }
  return canonical;
}

bool KeysOverlap(const toml::table& root, std::string_view a, std::string_view b) {
  const std::string first = CanonicalKey(root, a);
  const std::string second = CanonicalKey(root, b);
  return IsUnder(first, second) || IsUnder(second, first);
}

}  // namespace memsweep::config
