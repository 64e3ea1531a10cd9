// One cell's estimate as a row of JSON (the fields of `memsweep estimate --format json`,
// docs/estimate.md), computed in a process of its own as `memsweep run` isolates its cells: one
// cell's state (a leaked tensor, an allocator's cache, a crash) never reaches the next. `memsweep
// estimate` prints these rows; `memsweep run` stores each cell's beside its measurement.
//
//   nlohmann::json row = estimate::EstimateIsolated(cell, target);
//   if (row["status"] == "oom") std::cout << row["message"];
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "core/estimate/cell_estimate.h"
#include "core/experiment/cell.h"

namespace memsweep::estimate {

// The estimate's figures as JSON: cell, label, status, message, device, target, budget_bytes,
// seconds; for estimated/fits/oom also the peaks, the breakdown, where the peak falls, the
// largest allocation, CUDA's cuBLAS workspaces, the headroom (and `marginal`) or the failed
// request.
nlohmann::json EstimateToJson(const CellEstimate& e);

// EstimateCell in a forked child that writes its row back through a pipe; a child that ends
// without one gives a `failed` row saying how it ended. Where forking is not safe (the process
// has threads: process::ForkIsSafe) the estimate runs in this process. The child's stderr goes
// to `stderr_path` ("" = this process's). A child still running after `timeout_seconds` (0 =
// no limit) is killed and the row is `failed`, saying so; so is one still running when `stop`
// (checked about every second) returns true.
nlohmann::json EstimateIsolated(const experiment::Cell& cell, const EstimateTarget& target,
                                const std::string& stderr_path = "", double timeout_seconds = 0,
                                const std::function<bool()>& stop = {});

// The same in a new process, for a caller with threads (where forking is unsafe, as in a runner
// that has looked for a GPU): `self estimate CELL_FILE --source SOURCE --format row` — the cell
// as `memsweep worker` reads it (cell_file: experiment::CellToToml of `cell`).
nlohmann::json EstimateExecuted(const std::string& self, const std::string& cell_file,
                                const experiment::Cell& cell, const EstimateTarget& target,
                                const std::string& stderr_path = "", double timeout_seconds = 0,
                                const std::function<bool()>& stop = {});

// The line a child writes its row as (read back by the two above).
std::string EstimateRowLine(const nlohmann::json& row);

}  // namespace memsweep::estimate
