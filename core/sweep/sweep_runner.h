// RunSweep: runs every cell of an experiment plan, each in its own worker process, and records
// each outcome in the results database as soon as the cell ends.
//
// - Workers: CPU cells run in a fork of the runner (SweepOptions::in_process_worker), others in
//   a new `memsweep worker` process; either way a crash ends only its cell.
// - Resume: a cell whose row is already finished is skipped (ok and oom always; failed and
//   timeout unless --rerun failed; --rerun all runs everything again). A cell left 'running'
//   or 'pending' by an interrupted or killed runner runs again; its row is reused, so nothing is
//   ever duplicated.
// - A crash (abort, segfault), a budget OOM or a timeout is that cell's status with its message;
//   the sweep goes on. A worker killed by SIGKILL the runner did not send is reported as the
//   host's OOM killer's most likely work, with the worker's host figures (peak resident set,
//   host pool peak) where known.
// - Each finished cell's result JSON and summary table are kept beside the database, in a folder
//   of that database (CellFilesDirectory); a cell that runs again replaces them, so they are
//   always its latest run's, with the status the database records.
// - Loss-equivalence verdicts ([experiment] reference) are updated by the database in the
//   transactions that record the plan and claim and finish each cell (verification_store.h).
// - Stop requests (SIGINT/SIGTERM) kill the running worker, put its cell back to 'pending' and
//   end the sweep.
// - A database that fails during the sweep (stops taking writes, turns corrupt) stops it: the
//   ResultsError thrown says what ran, what is recorded (every cell before, whole) and what to
//   do; the cell whose outcome could not be recorded keeps no figures (its result files are kept
//   beside the database) and runs again on the next sweep, as do the cells after it.
//
//   SweepOptions options;
//   options.db_path = "results/memsweep.db";
//   SweepSummary summary = RunSweep(plan, options);
#pragma once

#include "core/sweep/cell_runner.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "core/experiment/experiment_plan.h"

namespace memsweep::sweep {

enum class Rerun : uint8_t { kNone, kFailed, kAll };


struct SweepOptions {
  std::string db_path = "results/memsweep.db";
  Rerun rerun = Rerun::kNone;
  double cell_timeout_seconds = 1800.0;
  std::string work_dir;    // worker files (cell TOML, result JSON, stderr); default beside the db
  // A single updating progress line (for terminals); false: a log line at least every 10 s
  // while a cell runs (pipes, files: progress_line.h).
  bool progress_line = false;
  const std::atomic<bool>* stop = nullptr;  // set by a signal handler to stop the sweep
  // The worker's code, run in a fork of the runner (no exec) for cells on the CPU, so that a
  // cell does not pay for loading LibTorch again. Unset, or for CUDA cells ([device] type
  // "cuda"/"auto": CUDA state and the allocator's environment must be fresh), or when the
  // runner has more than one thread, every cell execs `memsweep worker`.
  std::function<int(const WorkerFiles&)> in_process_worker;
  // Store each cell's estimate (`memsweep estimate`'s figures, docs/estimate.md) beside its
  // measurement: computed after the cell's worker ends, in a fork of the runner, for the GPU the
  // worker ran on (its compute capability sets the cuBLAS workspaces). `memsweep run
  // --no-estimate` turns it off.
  bool estimate = true;
};

struct SweepSummary {
  int64_t experiment_id = 0;
  int64_t cells = 0;
  int64_t skipped = 0;  // already finished
  int64_t ok = 0, oom = 0, failed = 0, timeout = 0;
  bool interrupted = false;
};

SweepSummary RunSweep(const experiment::ExperimentPlan& plan, const SweepOptions& options);

// Where each finished cell's result JSON and summary table are kept:
// <database directory>/<database file stem>/<experiment name>/cell<index>-<hash>.{json,txt}
// (results/memsweep.db: results/memsweep/quickstart/). A cell that runs replaces its files; one
// whose worker left no result keeps a .txt of its status and error only.
std::filesystem::path CellFilesDirectory(const std::string& db_path, const std::string& experiment);

}  // namespace memsweep::sweep
