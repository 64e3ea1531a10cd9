// `memsweep snapshot RUN [--db FILE] -o FILE.pickle`: writes the run's allocation history, stored
// when it ran with [experiment] memory_history = N, as the pickle torch.cuda.memory._dump_snapshot
// writes: drop it onto https://pytorch.org/memory_viz (docs/snapshot.md).
//
//   memsweep run experiments/quickstart.toml --set experiment.memory_history=200000
//   memsweep snapshot 1 -o run1.pickle
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/cli/exit_code.h"
#include "core/cli/query_command.h"

namespace memsweep::cli {

struct SnapshotOptions {
  int64_t run_id = 0;
  std::string db_path = kDefaultResultsDb;
  std::string output;
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code` (kOk written;
// kInvalidInput for no database, an unknown run, a run without a stored history, or an output
// that cannot be written — then nothing is written).
void AddSnapshotCommand(CLI::App& app, SnapshotOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
