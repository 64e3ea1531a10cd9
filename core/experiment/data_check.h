// Data check: every data source a plan's cells train on, read once before any cell runs, so
// that a malformed line, an empty file or a directory given as [data] path is refused like a
// mistake in the experiment file (exit 2, nothing run, no results database touched) instead of
// failing every cell in its worker.
//
//   // Throws config::ConfigError for the file, data::DataError for its data:
//   //   "data.jsonl:7: invalid JSON (...): each line must be one JSON object ..."
//   const ExperimentPlan plan = LoadRunnablePlan(file, overrides);
//
// Cells that share a source ([data] path, format, text_field, train_on) read it once. A text
// corpus that the token cache (core/data/token_cache.h) holds — the same file, size and
// modification time, tokenized before — is not read: its cells read the cache instead. Token
// files (format "tokens"), the [model] config and weights and the [data] tokenizer are read by
// each cell's own validation (config::ValidatedRunFromTable).
#pragma once

#include <string>
#include <vector>

#include "core/experiment/experiment_plan.h"

namespace memsweep::experiment {

// LoadExperimentPlan (every cell validated as a run), then each distinct text data source of
// its cells read once with data::CheckDocuments; throws the first data::DataError, whose message
// names the file and line and says what to do.
ExperimentPlan LoadRunnablePlan(const std::string& path,
                                const std::vector<std::string>& overrides = {});

}  // namespace memsweep::experiment
