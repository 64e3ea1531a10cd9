// `memsweep run FILE`: runs an experiment — every cell of its matrix, each in its own worker
// process — recording everything in the results database, then prints one line per cell.
//
//   memsweep run experiments/quickstart.toml [--db F] [--set key=value]... [--rerun failed|all]
//                [--cell-timeout SECONDS] [--wide | --columns a,b,c]
//
// Exit codes (core/cli/exit_code.h, docs/cli.md): kOk every cell ran (an OOM against the budget
// is a result); kInvalidInput invalid input (nothing is run or written) or a results database
// that cannot be used (if it fails during the sweep, the sweep stops: the cells recorded before
// stay, the rest run on the next sweep); kRunFailed some cell failed or timed out; kInterrupted.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/cli/exit_code.h"
#include "core/cli/table_width.h"

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
  // Skip each cell's estimate (run_summary's estimated_* columns stay NULL).
  bool no_estimate = false;
  // The summary table: fitted to the terminal unless --wide; --columns chooses its columns.
  TableWidthOptions width;
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`.
void AddRunCommand(CLI::App& app, RunOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
