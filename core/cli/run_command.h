// `memsweep run FILE`: runs an experiment — every cell of its matrix, each in its own worker
// process — recording everything in the results database, then prints one line per cell.
//
//   memsweep run experiments/quickstart.toml [--db F] [--set key=value]... [--rerun failed|all]
//                [--cell-timeout SECONDS]
//
// Exit codes (docs/cli.md): 0 every cell ran (an OOM against the budget is a result), 2 invalid
// input (nothing is run or written), 3 some cell failed or timed out, 130 interrupted.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace memsweep::cli {

struct RunOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string db_path = "results/memsweep.db";
  std::string rerun = "none";
  double cell_timeout_seconds = 1800.0;
  // Every cell in a new `memsweep worker` process, CPU cells included (default: CPU cells start
  // as a fork of the runner, without loading LibTorch again).
  bool exec_workers = false;
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`.
void AddRunCommand(CLI::App& app, RunOptions& options, int& exit_code);

}  // namespace memsweep::cli
