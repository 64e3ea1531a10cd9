#include "core/cli/worker_command.h"

#include "core/cli/command.h"
#include "core/sweep/cell_runner.h"

namespace memsweep::cli {

// Running the cell is the sweep's (core/sweep/cell_runner.h); the command maps its outcome to
// an exit code, and RunCommand maps invalid input to kInvalidInput.
ExitCode RunWorker(const WorkerOptions& options) {
  return sweep::RunCellFiles(options) == sweep::CellRun::kRecorded ? ExitCode::kOk
                                                                    : ExitCode::kRunFailed;
}

void AddWorkerCommand(CLI::App& app, WorkerOptions& options, ExitCode& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "worker", "Run one cell file (from plan --write-cells): the sweep's worker, or one rank "
                "under torchrun/srun");
  cmd->add_option("--cell", options.cell, "The cell's resolved TOML")->required();
  cmd->add_option("--source", options.source, "The experiment file it came from")->required();
  cmd->add_option("--result", options.result, "Where to write the result JSON")->required();
  cmd->add_option("--summary", options.summary, "Where to write the summary table");
  AddCommand(cmd, exit_code, [&options] { return RunWorker(options); });
}

}  // namespace memsweep::cli
