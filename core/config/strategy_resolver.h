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
// Fills cfg.strategies from root["strategies"], loading cfg.plugin_paths first.
void ResolveStrategies(const toml::table& root, const std::string& source, RunConfig& cfg);
// `data` as the batching strategy among `strategies` configures it (micro-batch size,
// accumulation, length, padding); `source` names the file in errors.
data::DataConfig EffectiveDataConfig(const data::DataConfig& data,
                                     const plugin::StrategySet& strategies,
                                     const std::string& source);
// cfg.data as cfg's batching strategy configures it (creates cfg's strategies; a validated
// RunConfig's data already is).
data::DataConfig EffectiveDataConfig(const RunConfig& cfg);
// Creates the strategies of cfg.strategies (errors name the plugin).
plugin::StrategySet InstantiateStrategies(const RunConfig& cfg);

}  // namespace memsweep::config
