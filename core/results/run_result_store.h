// Writes the figures of one run-result JSON document (core/run_files/run_report.cc's
// RunResultToJson, plus an optional "plugins" array) into the per-run tables: environments,
// run_metrics, phase_memory, step_metrics, memory_timeline and run_plugins; and, when the
// document's "memory_snapshot" names a file ({"file", "format", "events"}), that file's bytes into
// memory_snapshots. Used by ResultsDb
// inside its transactions; missing or null fields are stored as NULL.
//
//   ImmediateTransaction transaction(db);
//   DeleteRunDetails(db, run_id);
//   StoreRunDetails(db, run_id, result_json);
//   transaction.Commit();
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/results/sqlite_handles.h"

namespace memsweep::results {

// Removes every per-run row of `run_id` (the runs row itself stays).
void DeleteRunDetails(SqliteConnection& db, int64_t run_id);

// Inserts the rows for `result`; call DeleteRunDetails first when the run may have some.
void StoreRunDetails(SqliteConnection& db, int64_t run_id, const nlohmann::json& result);

// Inserts the run's estimate (a row of core/estimate/isolated_estimate.h's JSON) into
// run_estimates; DeleteRunDetails removes it with the rest.
void StoreRunEstimate(SqliteConnection& db, int64_t run_id, const nlohmann::json& estimate);

// The columns StoreRunDetails fills in `table` ("run_metrics", "environments", "run_ranks"),
// besides run_id: the result figures of core/train/result_fields.h and a few of the store's own.
// Empty for any other table.
std::vector<std::string> StoredColumns(const std::string& table);

}  // namespace memsweep::results
