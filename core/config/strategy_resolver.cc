#include "core/config/strategy_resolver.h"

#include <cctype>
#include <filesystem>

#include "core/config/config_error.h"
#include "core/config/toml_reader.h"
#include "core/config/plugin_params_validation.h"
#include "core/plugin/plugin_registry.h"

namespace memsweep::config {
namespace fs = std::filesystem;
namespace {

std::string Available(const plugin::PluginRegistry& registry, const std::string& slot) {
  std::string names;
  for (const auto* lib : registry.InSlot(slot)) names += (names.empty() ? "" : ", ") + lib->name();
  return names.empty() ? "none installed" : names;
}

StrategyChoice Choose(const plugin::PluginRegistry& registry, const std::string& slot,
                      const toml::table* table, const std::string& source,
                      const std::string& section) {
  static const toml::table kEmpty;
  const toml::table& t = table != nullptr ? *table : kEmpty;
  const plugin::PluginLibrary* library = nullptr;
  if (const toml::node* name = t.get("plugin")) {
    if (!name->is_string()) {
      throw ConfigError(Where(source, name->source()) + section + " plugin must be a string");
    }
    library = registry.Find(slot, name->as_string()->get());
    if (library == nullptr) {
      throw ConfigError(Where(source, name->source()) + section + " plugin = \"" +
                        name->as_string()->get() + "\" is not a known " + slot +
                        " plugin; available: " + Available(registry, slot) +
                        " (memsweep plugins lists them, with any that failed to load; from the "
                        "repository, tools/quickstart builds only each slot's default plugin, "
                        "tools/build every one)");
    }
  } else {
    library = registry.DefaultFor(slot);
    if (library == nullptr) {
      throw ConfigError(Where(source, t.source()) + section + ": no plugin chosen and slot '" +
                        slot + "' has no default plugin installed; available: " +
                        Available(registry, slot));
    }
  }
  StrategyChoice choice;
  choice.slot = slot;
  choice.plugin = library->name();
  choice.version = library->version();
  choice.params = ValidateParams(*library, t, source, section);
  choice.origin = Where(source, t.source()) + section;
  for (const auto& spec : library->params()) {
    const toml::node* value = t.get(spec.name);
    if (value != nullptr && value->source().begin.line > 0) {  // a --set value has no line
      choice.param_origins[spec.name] = Where(source, value->source()) + section;
    }
  }
  return choice;
}

bool IsWordCharacter(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where a constructor's message about `choice` points: at the parameter it names first (as a
// word: "chunks must be at least 1"), where the table gave it; else at the table.
std::string OriginOfMessage(const StrategyChoice& choice, const std::string& message) {
  std::string origin = choice.origin.empty() ? "[strategies." + choice.slot + "]" : choice.origin;
  // The plugin's own words follow PluginLibrary::Create's "... could not be created: ".
  const std::string created = "could not be created: ";
  const size_t own = message.find(created);
  const size_t from = own == std::string::npos ? 0 : own + created.size();
  size_t first = std::string::npos;
  for (const auto& [name, at] : choice.param_origins) {
    for (size_t pos = message.find(name, from); pos != std::string::npos;
         pos = message.find(name, pos + 1)) {
      const size_t end = pos + name.size();
      if ((pos > 0 && IsWordCharacter(message[pos - 1])) ||
          (end < message.size() && IsWordCharacter(message[end]))) {
        continue;
      }
      if (pos < first) {
        first = pos;
        origin = at;
      }
      break;
    }
  }
  return origin;
}

// Each failure's message, indented under a heading.
std::string Reasons(const std::vector<plugin::PluginFailure>& failures) {
  std::string text;
  for (const plugin::PluginFailure& failure : failures) {
    text += "\n  ";
    for (char c : failure.reason) text += c == '\n' ? std::string("\n  ") : std::string(1, c);
  }
  return text;
}

}  // namespace

void RefuseFailedStartupPlugins() {
  const plugin::PluginRegistry& registry = plugin::PluginRegistry::Default();
  std::vector<plugin::PluginFailure> builtin, environment;
  for (const plugin::PluginFailure& failure : registry.StartupFailures()) {
    (failure.origin == plugin::kBuiltinOrigin ? builtin : environment).push_back(failure);
  }
  if (!builtin.empty()) {
    throw ConfigError("memsweep's built-in plugin directory " + plugin::BuiltinPluginDirectory() +
                      " holds libraries that failed to load:" + Reasons(builtin) +
                      "\nthe installation is broken: build memsweep again (tools/build) or "
                      "install it again");
  }
  if (!environment.empty()) {
    throw ConfigError(std::string("MEMSWEEP_PLUGIN_PATH names libraries that failed to load:") +
                      Reasons(environment) +
                      "\nrebuild or remove them, or take them out of MEMSWEEP_PLUGIN_PATH "
                      "(`memsweep plugins` lists every plugin and every failure)");
  }
}

void ReadPluginPaths(const std::string& source, const toml::table& table,
                     std::vector<std::string>& paths) {
  TableReader reader(source, "[plugins]", table, {"paths"});
  const toml::node* node = table.get("paths");
  if (node == nullptr) return;
  if (!node->is_array()) throw ConfigError(reader.At("paths") + " must be an array of paths");
  for (const toml::node& item : *node->as_array()) {
    if (!item.is_string()) {
      throw ConfigError(Where(source, item.source()) + "[plugins] paths entries must be strings");
    }
    fs::path path(item.as_string()->get());
    if (path.is_relative() && !source.empty()) path = fs::path(source).parent_path() / path;
    if (!fs::exists(path)) {
      throw ConfigError(Where(source, item.source()) + "[plugins] path '" + path.string() +
                        "' does not exist");
    }
    paths.push_back(path.lexically_normal().string());
  }
}

void ResolveStrategies(const toml::table& root, const std::string& source, RunConfig& cfg) {
  RefuseFailedStartupPlugins();
  plugin::PluginRegistry& registry = plugin::PluginRegistry::Default();
  // ReadPluginPaths keeps the entries in order, one path each.
  const toml::array* entries = root["plugins"]["paths"].as_array();
  for (size_t i = 0; i < cfg.plugin_paths.size(); ++i) {
    const std::vector<plugin::PluginFailure> failures =
        registry.LoadPath(cfg.plugin_paths[i], "[plugins] paths");
    if (failures.empty()) continue;
    const toml::node* entry = entries != nullptr ? entries->get(i) : nullptr;
    throw ConfigError((entry != nullptr ? Where(source, entry->source()) : source + ": ") +
                      "[plugins] paths entry '" + cfg.plugin_paths[i] +
                      "': failed to load:" + Reasons(failures) +
                      "\nrebuild or remove the library, or take it out of [plugins] paths");
  }
  static const toml::table kEmpty;
  const toml::node* node = root.get("strategies");
  if (node != nullptr && !node->is_table()) {
    throw ConfigError(Where(source, node->source()) + "strategies must be a table");
  }
  const toml::table& strategies = node != nullptr ? *node->as_table() : kEmpty;
  std::vector<std::string> slots = SlotNames();
  TableReader(source, "[strategies]", strategies, slots);  // rejects unknown slots

  cfg.strategies.clear();
  for (const auto& slot : slots) {
    if (slot == "callbacks") continue;
    const toml::node* table = strategies.get(slot);
    if (table != nullptr && !table->is_table()) {
      throw ConfigError(Where(source, table->source()) + "[strategies." + slot +
                        "] must be a table");
    }
    cfg.strategies.push_back(Choose(registry, slot, table ? table->as_table() : nullptr, source,
                                    "[strategies." + slot + "]"));
  }
  const toml::node* callbacks = strategies.get("callbacks");
  if (callbacks == nullptr) return;
  std::vector<const toml::table*> tables;
  if (callbacks->is_table()) tables.push_back(callbacks->as_table());
  if (callbacks->is_array()) {
    for (const toml::node& item : *callbacks->as_array()) {
      if (!item.is_table()) {
        throw ConfigError(Where(source, item.source()) +
                          "[[strategies.callbacks]] entries must be tables");
      }
      tables.push_back(item.as_table());
    }
  }
  if (tables.empty()) {
    throw ConfigError(Where(source, callbacks->source()) +
                      "strategies.callbacks must be tables: [[strategies.callbacks]]");
  }
  for (const toml::table* table : tables) {
    if (!table->contains("plugin")) {
      throw ConfigError(Where(source, table->source()) +
                        "[[strategies.callbacks]] needs plugin = \"<name>\"; available: " +
                        Available(registry, "callbacks"));
    }
    cfg.strategies.push_back(Choose(registry, "callbacks", table, source,
                                    "[[strategies.callbacks]]"));
  }
}

plugin::StrategySet InstantiateStrategies(const RunConfig& cfg) {
  plugin::PluginRegistry& registry = plugin::PluginRegistry::Default();
  for (const auto& path : cfg.plugin_paths) registry.LoadPath(path, "[plugins] paths");
  plugin::StrategySet set;
  for (const auto& choice : cfg.strategies) {
    const std::string at = choice.origin.empty() ? "[strategies." + choice.slot + "]"
                                                 : choice.origin;
    const plugin::PluginLibrary* library = registry.Find(choice.slot, choice.plugin);
    if (library == nullptr) {
      throw ConfigError(at + " plugin '" + choice.plugin + "' (" + choice.slot + ") is not loaded");
    }
    std::shared_ptr<Strategy> made;
    try {
      made = library->Create(choice.params);
    } catch (const std::exception& e) {
      // The constructor checks its parameters: point at the one its message names (the key's
      // line, or the [matrix] line that set it), else at the table that holds them.
      throw ConfigError(OriginOfMessage(choice, e.what()) + " " + e.what());
    }
    set.push_back({choice.slot, choice.plugin, library->version(), std::move(made)});
  }
  return set;
}

data::DataConfig EffectiveDataConfig(const data::DataConfig& data,
                                     const plugin::StrategySet& strategies,
                                     const std::string& source) {
  data::DataConfig effective = data;
  for (const plugin::ActiveStrategy& active : strategies) {
    auto* batching = dynamic_cast<BatchingStrategy*>(active.impl.get());
    if (batching == nullptr) continue;
    try {
      batching->ConfigureBatches(effective);
    } catch (const std::exception& e) {
      throw ConfigError((source.empty() ? std::string("config") : source) +
                        ": [strategies.batching] " + e.what());
    }
  }
  return effective;
}

}  // namespace memsweep::config
