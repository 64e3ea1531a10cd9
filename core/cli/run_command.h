// `memsweep run FILE`: runs one experiment configuration, prints its summary table and writes
// the full result as JSON (results/<experiment name>.json unless --json says otherwise).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace memsweep::cli {

struct RunOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string json_path;
  bool quiet = false;
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`.
void AddRunCommand(CLI::App& app, RunOptions& options, int& exit_code);

}  // namespace memsweep::cli
