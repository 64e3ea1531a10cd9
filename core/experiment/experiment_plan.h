// ExperimentPlan: an experiment file expanded into the cells to run — one per combination of
// its [matrix] (docs/experiment-format.md, "Matrices") and repeat — each validated before
// anything runs.
//
//   ExperimentPlan plan =
//       LoadExperimentPlan("experiments/quickstart.toml", {"strategies.batching.seq_len=128"});
//   for (const Cell& cell : plan.cells) {
//     config::RunConfig cfg = config::RunConfigFromTable(cell.document, cell.source);
//     ...
//   }
//
// Errors are config::ConfigError ("file:line:column: what; what to do"); an error found in one
// cell also names the cell. Every bad cell is reported, not only the first: one line per
// distinct message with its cell ("; in cell 3 (...)"), and the other cells that share it
// ("; in cell 0 (...) and cells 1, 2"), at most kMaxCellErrors lines, then "and N more errors".
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment/cell.h"

namespace memsweep::experiment {

struct ExperimentPlan {
  std::string name;       // [experiment] name
  std::string source;     // the experiment file
  std::string file_text;  // its text, as read
  int64_t combinations = 0;
  std::vector<Cell> cells;  // combination by combination, repeats consecutive
  // The keys the matrix varies (file order), then the keys include entries added.
  std::vector<std::string> varying_keys;
  // [experiment] reference ("key=value[,key=value]", "" when none) and the combination it names.
  // Every cell's reference_hash then names the reference combination's cell with its repeat.
  std::string reference;
  std::optional<int64_t> reference_combination;
};

// The most distinct cell errors one refused plan lists in full.
inline constexpr size_t kMaxCellErrors = 20;

// Called for every cell before the plan is returned; throws config::ConfigError to reject it.
using CellValidator = std::function<void(const Cell&)>;

// The default validator: the cell must be a valid run (config::RunConfigFromTable).
void ValidateCellAsRun(const Cell& cell);

// Reads the file, applies the --set `overrides` ("section.key=value"), expands the matrix and
// validates every cell.
ExperimentPlan LoadExperimentPlan(const std::string& path,
                                  const std::vector<std::string>& overrides = {},
                                  const CellValidator& validate = ValidateCellAsRun);
// The same from text; `source` names it in messages and anchors relative paths.
ExperimentPlan ParseExperimentPlan(std::string_view text, const std::string& source,
                                   const std::vector<std::string>& overrides = {},
                                   const CellValidator& validate = ValidateCellAsRun);

}  // namespace memsweep::experiment
