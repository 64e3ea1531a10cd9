#include "core/train/row_preview.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "memsweep/batch_source.h"
#include "memsweep/strategy.h"

namespace memsweep::train {

RowLengths PreviewRows(const config::RunConfig& cfg, const plugin::StrategySet& strategies) {
  RowLengths lengths;
  PackingStrategy* packing = nullptr;
  for (const plugin::ActiveStrategy& s : strategies) {
    if (auto* p = dynamic_cast<PackingStrategy*>(s.impl.get())) packing = p;
  }
  if (packing == nullptr) return lengths;
  const std::unique_ptr<data::BatchSource> source =
      packing->MakeBatchSource(cfg.data, cfg.experiment.seed);
  const int64_t batches = cfg.experiment.steps * cfg.data.accumulation_steps *
                          std::max(1, cfg.device.world_size);
  int64_t positions = 0;
  for (int64_t i = 0; i < batches; ++i) {
    const data::Batch batch = source->Next();
    positions += batch.positions;
    lengths.rows += batch.Rows();
    lengths.longest = std::max(lengths.longest, batch.input_ids.size(1));
  }
  if (lengths.rows > 0) {
    lengths.mean = static_cast<double>(positions) / static_cast<double>(lengths.rows);
  }
  return lengths;
}

std::string ShortRowsWarning(double mean, int64_t longest, int64_t seq_len) {
  if (seq_len <= 0 || mean <= 0 || mean >= kShortRowFraction * static_cast<double>(seq_len)) {
    return "";
  }
  char figures[160];
  std::snprintf(figures, sizeof figures,
                "the rows trained are %.0f positions long on average (longest %lld) against "
                "seq_len = %lld",
                mean, static_cast<long long>(longest), static_cast<long long>(seq_len));
  return std::string("short rows: ") + figures +
         ": the documents are shorter than a row, so memory and speed are those of the shorter "
         "rows; for full rows set [strategies.packing] plugin = \"concat\" or "
         "[strategies.batching] padding = \"max_length\"";
}

}  // namespace memsweep::train
