// The figures `memsweep compare` works on: each run's, and each cell's (the mean over the cell's
// repeats, i.e. its runs with equal params). Also finds the baseline cell a comparison is
// relative to. Definitions: docs/results.md, "compare".
//
//   std::vector<CellFigures> cells = GroupIntoCells(runs);
//   const CellFigures& baseline =
//       cells[FindBaselineCell(cells, "strategies.batching.micro_batch_size=8")];
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/results/run_status.h"

namespace memsweep::results {

// One run with status ok or oom, as compare reads it from run_summary.
struct RunFigures {
  int64_t run_id = 0;
  int64_t cell_index = 0;
  RunStatus status = RunStatus::kOk;
  nlohmann::json params = nlohmann::json::object();  // dotted key -> value
  std::optional<double> peak_allocated_bytes;
  std::optional<double> peak_reserved_bytes;
  std::optional<double> activations_bytes;
  std::optional<double> tokens_per_s;
  std::optional<double> final_loss;
  // The run's estimate (run_summary's estimated_* columns; none when not estimated).
  std::optional<double> estimated_peak_allocated_bytes;
  std::optional<double> estimate_error;  // ok runs the estimate fits: (estimated - measured) / measured
  std::string estimate_status;           // fits, oom, estimated, unsupported, failed; "" = none
};

// The runs of one cell (equal params) and the mean of their figures: over the ok runs; a cell
// without ok runs has the mean peaks of its oom runs (how far they got: a lower bound) and no
// throughput or loss.
struct CellFigures {
  int64_t cell_index = 0;  // the lowest cell_index among its runs
  nlohmann::json params = nlohmann::json::object();
  std::vector<int64_t> run_ids;
  int ok_runs = 0;
  int oom_runs = 0;
  std::optional<double> peak_allocated_bytes;
  std::optional<double> peak_reserved_bytes;
  // Peak allocated minus model state: what the kernels keep (CPU and CUDA kernels differ here).
  std::optional<double> activations_bytes;
  std::optional<double> tokens_per_s;
  std::optional<double> final_loss;
  // The estimate of the cell (equal for its runs: the first that has one) and the mean error.
  std::optional<double> estimated_peak_allocated_bytes;
  std::optional<double> estimate_error;
  std::string estimate_status;

  int RunCount() const { return ok_runs + oom_runs; }
  const char* Status() const;  // "ok" (all runs ok), "oom" (all oom) or "mixed"
};

// Groups runs by params, sorted by cell_index.
std::vector<CellFigures> GroupIntoCells(const std::vector<RunFigures>& runs);

// The index into `cells` of the baseline named by `spec`:
//   ""                      the lowest cell_index with an ok run;
//   "RUN_ID"                the cell holding that run;
//   "key=value[,key=value]" the one cell whose params have those values (see ParamMatches).
// The baseline must have an ok run. Throws std::invalid_argument saying what is wrong.
size_t FindBaselineCell(const std::vector<CellFigures>& cells, const std::string& spec);

// A param value as people write it: strings bare, everything else as JSON ("8", "true").
std::string ParamText(const nlohmann::json& value);
// True when `text` names `value`: equal text (bare or JSON-quoted for strings), or the same
// number ("8" matches 8 and 8.0).
bool ParamMatches(const nlohmann::json& value, const std::string& text);
// The value of `key` in `params`, null when absent.
const nlohmann::json& ParamValue(const nlohmann::json& params, const std::string& key);

}  // namespace memsweep::results
