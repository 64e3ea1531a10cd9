// `memsweep plugins`: every plugin found (built-in directory, MEMSWEEP_PLUGIN_PATH, --path),
// by slot, with version, description and parameters (type, default, doc), then the libraries
// that failed to load, where each was named and why. Exit codes: kOk every library loaded,
// kInvalidInput one failed (the rule of docs/plugin-guide.md, "Load errors").
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/cli/exit_code.h"

namespace memsweep::cli {

struct PluginsOptions {
  std::vector<std::string> paths;
};

void AddPluginsCommand(CLI::App& app, PluginsOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
