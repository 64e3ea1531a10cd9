// Choosing and validating the plugins of a run: [plugins] paths are loaded, each slot gets the
// plugin its [strategies.<slot>] table names (or the slot's default plugin), and the table is
// validated against that plugin's schema. Callbacks are an array of tables:
//
//   [strategies.precision]
//   plugin = "bf16-autocast"
//
//   [[strategies.callbacks]]
//   plugin = "empty_cache"
//   every = 10
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "core/config/run_config.h"
#include "memsweep/data_config.h"
#include "core/plugin/active_strategy.h"

namespace memsweep::config {

// [plugins] paths = ["relative/to/file.so", "or/a/dir"]
void ReadPluginPaths(const std::string& source, const toml::table& table,
                     std::vector<std::string>& paths);
// The rule of docs/plugin-guide.md ("Load errors"): every library memsweep is pointed at must
// load, wherever it was named. Throws a ConfigError naming each library that failed to load
// from the built-in plugin directory or MEMSWEEP_PLUGIN_PATH, and what to do.
void RefuseFailedStartupPlugins();
// Fills cfg.strategies from root["strategies"], loading cfg.plugin_paths first. Refuses (with a
// ConfigError naming each library and where it was named) when a library of the built-in
// directory, MEMSWEEP_PLUGIN_PATH or cfg.plugin_paths failed to load.
void ResolveStrategies(const toml::table& root, const std::string& source, RunConfig& cfg);
// `data` as the batching strategy among `strategies` configures it (micro-batch size,
// accumulation, length, padding); `source` names the file in errors.
data::DataConfig EffectiveDataConfig(const data::DataConfig& data,
                                     const plugin::StrategySet& strategies,
                                     const std::string& source);
// Creates the strategies of cfg.strategies. A constructor's error is a ConfigError that names
// the plugin and the table it was configured in (StrategyChoice::origin).
plugin::StrategySet InstantiateStrategies(const RunConfig& cfg);

}  // namespace memsweep::config
