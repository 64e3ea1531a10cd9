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
#include "core/train/active_strategy.h"

namespace memsweep::config {

// [plugins] paths = ["relative/to/file.so", "or/a/dir"]
void ReadPluginPaths(const std::string& source, const toml::table& table,
                     std::vector<std::string>& paths);
// Fills cfg.strategies from root["strategies"], loading cfg.plugin_paths first.
void ResolveStrategies(const toml::table& root, const std::string& source, RunConfig& cfg);
// cfg.data as the batching strategy configures it (micro-batch size, accumulation, length).
data::DataConfig EffectiveDataConfig(const RunConfig& cfg);
// Creates the strategies of cfg.strategies (errors name the plugin).
train::StrategySet InstantiateStrategies(const RunConfig& cfg);

}  // namespace memsweep::config
