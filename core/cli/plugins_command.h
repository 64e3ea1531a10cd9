// `memsweep plugins`: every plugin found (built-in directory, MEMSWEEP_PLUGIN_PATH, --path),
// by slot, with version, description and parameters (type, default, doc), then the libraries
// that failed to load and why.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace memsweep::cli {

struct PluginsOptions {
  std::vector<std::string> paths;
};

void AddPluginsCommand(CLI::App& app, PluginsOptions& options, int& exit_code);

}  // namespace memsweep::cli
