// ResultsDb: the one SQLite file that holds every figure of every run (default
// results/memsweep.db). The sweep runner is its single writer within a process; several
// processes may write the same file at once (WAL mode, 30 s busy timeout, every write one
// BEGIN IMMEDIATE transaction). Storing a finished run is one transaction, so a crash at any
// moment leaves either the whole run or none of it. Schema and guarantees: docs/results.md.
//
//   ResultsDb db("results/memsweep.db", ResultsDb::Mode::kReadWrite);
//   const int64_t experiment = db.EnsureExperiment("ablation", path, file_text);
//   const int64_t run = db.ClaimRun(experiment, cell, getpid());
//   ... run the cell in a child process, read its result JSON ...
//   db.FinishRun(run, RunStatus::kOk, "", &result_json);   // nullptr after a crash or timeout
//   QueryResult rows = db.Query("SELECT run_id, tokens_per_s FROM run_summary");
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/results/loss_verification.h"
#include "core/results/query_result.h"
#include "core/results/results_error.h"
#include "core/results/run_status.h"
#include "core/results/sqlite_handles.h"

namespace memsweep::results {

// One cell of an experiment's matrix, as the sweep runner resolved it.
struct CellInfo {
  std::string cell_hash;  // identifies the cell (and repeat) within its experiment
  int64_t cell_index = 0;
  int64_t repeat = 0;
  std::optional<int64_t> seed;
  std::string config_json = "{}";  // the resolved configuration
  std::string params_json = "{}";  // the matrix parameters that vary: {"dotted.key": value}
  // The hash of the cell whose loss trajectory this cell's is verified against ([experiment]
  // reference; the reference cell names itself); nullopt when the experiment names none.
  std::optional<std::string> reference_hash;
};

struct ExperimentRow {
  int64_t id = 0;
  std::string name;
  std::string source_path;
  std::string file_text;
  std::string created_at;  // UTC, ISO 8601 with milliseconds
};

struct RunRow {
  int64_t id = 0;
  int64_t experiment_id = 0;
  std::string cell_hash;
  int64_t cell_index = 0;
  int64_t repeat = 0;
  std::optional<int64_t> seed;
  RunStatus status = RunStatus::kPending;
  std::string error;  // "" when none
  std::string config_json;
  std::string params_json;
  std::string started_at;   // "" until claimed
  std::string finished_at;  // "" until finished
  std::optional<int64_t> worker_pid;
  std::optional<std::string> reference_hash;
};

// A run's allocation history as stored (memory_snapshots): the pickle PyTorch's memory viewer
// opens.
struct StoredMemorySnapshot {
  std::string format;
  int64_t events = 0;
  std::string bytes;
};

class ResultsDb {
 public:
  enum class Mode : uint8_t {
    kReadWrite,  // creates the file, its directory and the schema; migrates older files
    kReadOnly,   // the file must exist at this binary's schema version; writes fail
  };

  ResultsDb(const std::string& path, Mode mode);

  const std::string& path() const { return db_.path(); }

  // The experiment with this name and exactly this file text, created when there is none (an
  // edited file is a new experiment; its runs do not mix with the old file's).
  int64_t EnsureExperiment(const std::string& name, const std::string& source_path,
                           const std::string& file_text);
  std::optional<ExperimentRow> FindExperiment(int64_t experiment_id);
  // The most recently created experiment, or the most recent one named `name` when given.
  std::optional<ExperimentRow> LatestExperiment(const std::string& name = "");

  // Records the cells of a plan as 'pending' (cells that already have a row keep their status
  // and figures; their reference is updated) and brings the experiment's verification table up
  // to date, in one transaction. Returns the run ids in the order of `cells`.
  std::vector<int64_t> AddPendingRuns(int64_t experiment_id, const std::vector<CellInfo>& cells);
  std::optional<RunRow> FindRun(int64_t experiment_id, const std::string& cell_hash);
  std::optional<RunRow> FindRun(int64_t run_id);
  // Marks the cell 'running' for `worker_pid`, inserting its row or resetting an existing one
  // (error, finish time and every figure of an earlier attempt are deleted), in one transaction.
  // The run id of a cell never changes. The verdicts of the run and of the runs verified
  // against it are updated in the same transaction (n/a while it runs).
  int64_t ClaimRun(int64_t experiment_id, const CellInfo& cell, int64_t worker_pid);
  // Sets the final status and error and stores every figure of `result` (the run-result JSON),
  // replacing any stored before, in one transaction. `result` is null when the run produced
  // none (crash, timeout): then only the status and error are recorded. The verdicts of the run
  // and of the runs verified against it are recomputed in the same transaction. `estimate`, when
  // given, is the cell's estimate (core/estimate/isolated_estimate.h), stored in run_estimates.
  void FinishRun(int64_t run_id, RunStatus status, const std::string& error,
                 const nlohmann::json* result, const nlohmann::json* estimate = nullptr);
  // Puts a claimed run back to 'pending' (its worker was stopped before it finished, e.g. by
  // Ctrl-C): the next sweep runs the cell again, in the same row.
  void ReturnToPending(int64_t run_id);
  // One row per cell of the experiment, by cell_index then repeat, as `memsweep run` prints them:
  // cell, repeat, status, params (JSON), peak_allocated, peak_reserved, tokens_per_s,
  // final_loss (formatted, ok runs only), verdict, error (its first 60 characters, one line).
  QueryResult CellOutcomes(int64_t experiment_id);
  // Every run of the experiment, by cell_index then repeat.
  std::vector<RunRow> Runs(int64_t experiment_id);

  // The run's stored allocation history; nullopt when it has none.
  std::optional<StoredMemorySnapshot> FindMemorySnapshot(int64_t run_id);

  // What verification compares of one run (loss_verification.h).
  RunEvidence LoadEvidence(int64_t run_id);

  // Runs one SQL statement. `parameters` are bound as text to ?1, ?2, ... Throws ResultsError
  // with SQLite's message for bad SQL (and for writes on a read-only database).
  QueryResult Query(const std::string& sql, const std::vector<std::string>& parameters = {});

 private:
  SqliteConnection db_;
};

}  // namespace memsweep::results
