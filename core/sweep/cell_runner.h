// Cell runner: runs one resolved cell and writes its result — the one place that does, below
// the command line. `memsweep worker` calls it (and with it a rank under torchrun or srun), the
// sweep calls it in a forked worker for CPU cells or starts `memsweep worker` (WorkerArgv), and
// a cell of several ranks starts its ranks through it.
//
//   const sweep::WorkerFiles files{"cell.toml", "experiments/x.toml", "out.json", "out.txt"};
//   if (sweep::RunCellFiles(files) == sweep::CellRun::kFailed) ...  // out.json says why
//
// The cell file is a cell as `memsweep plan --write-cells` writes it; its relative paths are
// anchored at `source`, and errors name the experiment file's lines (experiment::Cell's
// origins). With [device] world_size = N > 1 and no RANK in the environment it launches itself
// as N ranks (core/launch/rank_launcher.h) and merges their outcome into one result; with RANK
// set it is one rank: rank 0 writes the result (with every rank's figures), rank r > 0 writes
// <result>.rank<r>.
#pragma once

#include <string>
#include <vector>

namespace memsweep::sweep {

// The files of one worker run: what `memsweep worker --cell --source --result --summary` takes
// (summary optional).
struct WorkerFiles {
  std::string cell, source, result, summary;
};

// What running a cell left: its result written with status ok or oom (kRecorded), or a run that
// failed (kFailed: the result, when there is one, says why; a rank: its run was not ok).
enum class CellRun : uint8_t { kRecorded, kFailed };

// Trains the cell (or this rank of it) and writes its result and summary. Invalid input — an
// unreadable or invalid cell file, launcher variables that disagree with it — throws
// config::ConfigError before anything is written.
CellRun RunCellFiles(const WorkerFiles& files);

// `memsweep worker` for `files`, as this executable: how the sweep and the rank launcher start a
// cell in a new process.
std::vector<std::string> WorkerArgv(const WorkerFiles& files);

}  // namespace memsweep::sweep
