// The loss-equivalence verdict of each cell `memsweep compare` shows: read from the
// `verification` table when the experiment named a reference cell (the sweep stored one verdict
// per run), otherwise computed on the spot against the comparison's baseline cell. A cell's
// verdict is its most severe run's (fail, differs, close, pass, reference, n/a), its deviations
// the largest of its runs'. Definitions: docs/results.md, "Loss-equivalence verification".
//
//   CellVerdicts verdicts = VerifyCells(db, experiment_id, cells, baseline);
//   const CellVerdict& v = verdicts.by_cell.at(cell.cell_index);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/results/cell_figures.h"
#include "core/results/loss_verification.h"
#include "core/results/results_db.h"

namespace memsweep::results {

struct CellVerdict {
  RunVerdict verdict;  // the most severe run's
  std::optional<double> max_abs_deviation;
  std::optional<double> max_rel_deviation;
  std::optional<int64_t> max_deviation_step;
};

struct CellVerdicts {
  bool from_reference = false;  // true: stored verdicts against [experiment] reference
  std::optional<int64_t> reference_cell;  // cell_index of the reference (or the baseline)
  std::map<int64_t, CellVerdict> by_cell;  // key: CellFigures::cell_index
};

CellVerdicts VerifyCells(ResultsDb& db, int64_t experiment_id,
                         const std::vector<CellFigures>& cells, const CellFigures& baseline);

}  // namespace memsweep::results
