// `memsweep worker`: runs ONE experiment cell and writes its result JSON. The sweep runner
// starts it in a child process for every cell; users start it themselves as the ranks of a
// torchrun or srun job, on a cell file from `memsweep plan --write-cells` (docs/distributed.md).
//
//   memsweep worker --cell cell.toml --source experiments/x.toml --result out.json [--summary s.txt]
//
// stdout carries progress lines ("progress STEP STEPS TOKENS_PER_S PEAK_BYTES") for the runner.
// Exit codes (core/cli/exit_code.h): kOk the result was written (status ok or oom), kRunFailed
// the run failed (result written with status "failed"), kInvalidInput the cell file or the
// launcher variables are invalid (nothing written).
//
// With [device] world_size = N > 1 and no RANK in the environment it launches itself as N ranks
// (core/launch/rank_launcher.h) and merges their outcome into one result; with RANK set (by that
// launcher, torchrun or srun) it is one rank: it joins the c10d group at MASTER_ADDR:MASTER_PORT,
// rank 0 writes the result (with every rank's figures), rank r > 0 writes <result>.rank<r>, and
// a rank exits with kRunFailed unless its run was ok.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "core/cli/exit_code.h"
#include "core/sweep/sweep_runner.h"

namespace memsweep::cli {

// The command's files: --cell, --source, --result and (optional) --summary, the human-readable
// summary table. The sweep runner hands the same files to a forked worker.
using WorkerOptions = sweep::WorkerFiles;

void AddWorkerCommand(CLI::App& app, WorkerOptions& options, ExitCode& exit_code);

// The command's body: runs the cell and returns the exit code above; invalid input throws
// ConfigError (RunCommand makes it kInvalidInput). The sweep runner also calls it, through
// RunCommand, in a forked child for CPU cells (sweep_runner.h).
ExitCode RunWorker(const WorkerOptions& options);

}  // namespace memsweep::cli
