// The `verification` table: one verdict per run of an experiment that names a reference cell
// (runs.reference_hash), kept up to date inside the transactions that change what it depends on:
// claiming a run and finishing it (its own verdict and those of the runs verified against it),
// and recording a plan's cells (every run of the experiment). So a resumed sweep, a rerun of the
// reference or an interrupted sweep never leaves a verdict that disagrees with the stored losses.
//
//   ImmediateTransaction transaction(db);
//   ... store the run ...
//   UpdateRunVerification(db, run_id);
//   transaction.Commit();
#pragma once

#include <cstdint>

#include "core/results/loss_verification.h"
#include "core/results/sqlite_handles.h"

namespace memsweep::results {

// What the database holds of one run (status, seed, dtype, resolved config, plugin flags,
// per-step losses and tokens). A run without a result has an empty trajectory.
RunEvidence LoadRunEvidence(SqliteConnection& db, int64_t run_id);

// Recomputes the verdict of `run_id` and of every run of its experiment verified against it.
// Call inside a write transaction.
void UpdateRunVerification(SqliteConnection& db, int64_t run_id);
// Recomputes every verdict of the experiment (and deletes those of runs without a reference).
void UpdateExperimentVerification(SqliteConnection& db, int64_t experiment_id);

}  // namespace memsweep::results
