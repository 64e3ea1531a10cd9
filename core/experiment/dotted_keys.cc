#include "core/experiment/dotted_keys.h"

#include "core/config/config_error.h"
#include "core/config/toml_reader.h"

namespace memsweep::experiment {

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

const toml::node* FindAtPath(const toml::table& root, const std::string& dotted) {
  const toml::table* table = &root;
  const std::vector<std::string> parts = SplitDottedKey(dotted);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const toml::node* next = table->get(parts[i]);
    if (next == nullptr || !next->is_table()) return nullptr;
    table = next->as_table();
  }
  return table->get(parts.back());
}

toml::node* FindAtPath(toml::table& root, const std::string& dotted) {
  return const_cast<toml::node*>(FindAtPath(static_cast<const toml::table&>(root), dotted));
}

void AssignAtPath(toml::table& root, const std::string& dotted, toml::node&& value,
                  const toml::source_region& key_region, const std::string& source) {
  const std::vector<std::string> parts = SplitDottedKey(dotted);
  toml::table* table = &root;
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    auto [it, inserted] = table->insert(toml::key(parts[i], key_region), toml::table{});
    if (!it->second.is_table()) {
      throw config::ConfigError(config::Where(source, key_region) + "cannot set '" + dotted +
                                "': '" + walked + "' is a value, not a table; change the key");
    }
    table = it->second.as_table();
  }
  table->insert_or_assign(toml::key(parts.back(), key_region), std::move(value));
}

void EraseAtPath(toml::table& root, const std::string& dotted) {
  const std::vector<std::string> parts = SplitDottedKey(dotted);
  toml::table* table = &root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node* next = table->get(parts[i]);
    if (next == nullptr || !next->is_table()) return;
    table = next->as_table();
  }
  table->erase(parts.back());
}

}  // namespace memsweep::experiment
