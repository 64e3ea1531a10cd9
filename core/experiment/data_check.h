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

#include "core/config/run_config_loader.h"
#include "core/experiment/experiment_plan.h"

namespace memsweep::experiment {

// LoadExperimentPlan (every cell validated as a run), then each distinct text data source of
// its cells read once with data::CheckDocuments; throws the first data::DataError, whose message
// names the file and line and says what to do. `purpose`: how each cell is read (ReadFor::kPlan
// for `memsweep plan`, which needs no GPU for a CUDA cell).
ExperimentPlan LoadRunnablePlan(const std::string& path,
                                const std::vector<std::string>& overrides = {},
                                config::ReadFor purpose = config::ReadFor::kRun);
// The same, keeping each cell's validated run in `runs` (one per cell, in the plan's order):
// what validation found (the model's counts, the adapter's plan, the strategies it created) for
// a caller that needs it, so that no plugin is created a second time. Without `runs` the
// strategies are dropped once each cell has passed.
ExperimentPlan LoadRunnablePlan(const std::string& path, const std::vector<std::string>& overrides,
                                config::ReadFor purpose, std::vector<config::ValidatedRun>* runs);

}  // namespace memsweep::experiment
