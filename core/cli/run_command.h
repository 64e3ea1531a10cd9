// `memsweep run FILE`: runs one experiment configuration, prints its summary table and writes
// the full result as JSON (results/<experiment name>.json unless --json says otherwise).
// A file with a [matrix] needs --cell INDEX (see `memsweep plan FILE`): that cell is run and its
// result goes to results/<experiment name>-cell<INDEX>.json.
//
//   memsweep run experiments/quickstart.toml --cell 2 --set experiment.steps=10
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace memsweep::cli {

struct RunOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string json_path;
  bool quiet = false;
  int64_t cell = -1;  // --cell: the index of the matrix cell to run; -1 = the file is one run
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`.
void AddRunCommand(CLI::App& app, RunOptions& options, int& exit_code);

}  // namespace memsweep::cli
