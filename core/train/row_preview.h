// Row preview: the rows a cell's run will train, read from its data with its own batching and
// packing strategies, without a model — so that `memsweep plan` can say, before anything runs,
// that a cell's rows are well short of seq_len (docs/metrics.md, "Short rows"). The training
// loop reads the same batch source the same way (every rank reads every micro-batch of a step),
// so the figures are those the run's summary records.
//
//   const train::RowLengths rows = train::PreviewRows(run.config, run.strategies);
//   if (rows.mean < 0.9 * run.config.data.seq_len) ...
#pragma once

#include <cstdint>
#include <string>

#include "core/config/run_config.h"
#include "core/plugin/active_strategy.h"

namespace memsweep::train {

struct RowLengths {
  double mean = 0.0;    // positions per row (padding included), over every step
  int64_t longest = 0;  // positions of the longest row
  int64_t rows = 0;     // rows read (0: none could be read)
};

// Reads the batches of every step of `cfg` (steps x accumulation x ranks micro-batches) from
// the packing strategy among `strategies`; `cfg.data` as validation configured it.
RowLengths PreviewRows(const config::RunConfig& cfg, const plugin::StrategySet& strategies);

// Rows are short when their mean length is under this fraction of seq_len.
constexpr double kShortRowFraction = 0.9;
// What plan, estimate, run and the report say of rows whose mean length (positions, padding
// included) is under kShortRowFraction of seq_len, with the figures and the fix; "" otherwise.
std::string ShortRowsWarning(double mean, int64_t longest, int64_t seq_len);

}  // namespace memsweep::train
