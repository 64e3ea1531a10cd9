// Checking an experiment's [strategies.<slot>] table against the chosen plugin's schema, before
// anything is created: unknown keys (the allowed ones are listed), wrong types, missing required
// keys. Defaults fill in what the table leaves out. Errors are ConfigError with file:line:column.
//
//   PluginParams params = ValidateParams(*library, table, "experiments/x.toml",
//                                        "[strategies.callbacks]");
#pragma once

#include <toml++/toml.h>

#include <string>

#include "core/plugin/plugin_library.h"
#include "memsweep/plugin_params.h"

namespace memsweep::config {

// `table` may contain "plugin" (the choice itself), which is not a parameter.
PluginParams ValidateParams(const plugin::PluginLibrary& library, const toml::table& table,
                            const std::string& source, const std::string& section);

}  // namespace memsweep::config
