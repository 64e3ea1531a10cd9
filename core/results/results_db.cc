#include "core/results/results_db.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <system_error>
#include <thread>

#include "core/results/run_result_store.h"
#include "core/results/schema.h"
#include "core/results/verification_store.h"

namespace memsweep::results {
namespace {

namespace fs = std::filesystem;

// UTC timestamp with milliseconds: "2024-05-01T12:34:56.789Z".
constexpr const char* kNowSql = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

constexpr const char* kRunColumns =
    "id, experiment_id, cell_hash, cell_index, repeat, seed, status, error, config_json, "
    "params_json, started_at, finished_at, worker_pid, reference_hash";

constexpr const char* kExperimentColumns = "id, name, source_path, file_text, created_at";

// Refuses a file that is not an SQLite database before anything could write to it.
SqliteConnection CheckedDatabase(SqliteConnection db) {
  if (db.HoldsADatabase()) return db;
  throw ResultsError(db.path(),
                     "not a results database: file is not a database (SQLite); it was left as it "
                     "is. Pass --db a memsweep results database, or a path where none exists yet "
                     "to start a new one");
}

SqliteConnection OpenConnection(const std::string& path, ResultsDb::Mode mode) {
  if (mode == ResultsDb::Mode::kReadOnly) {
    if (!fs::exists(path)) {
      throw ResultsError(path, "no such results database (run a sweep first, or pass --db)");
    }
    return CheckedDatabase(SqliteConnection(path, SqliteConnection::Access::kReadOnly));
  }
  const fs::path parent = fs::path(path).parent_path();
  std::error_code error;
  if (!parent.empty()) fs::create_directories(parent, error);
  if (error) throw ResultsError(path, "cannot create directory: " + error.message());
  return CheckedDatabase(SqliteConnection(path, SqliteConnection::Access::kReadWriteCreate));
}

std::string JournalMode(SqliteConnection& db) {
  SqliteStatement pragma = db.Prepare("PRAGMA journal_mode");
  return pragma.Step() ? pragma.ColumnText(0) : "";
}

// Switching a new file to WAL needs an exclusive lock that SQLite's busy handler does not wait
// for when another process is doing the same, so retry for as long as a busy wait would.
void EnableWriteAheadLog(SqliteConnection& db) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::minstd_rand jitter(static_cast<unsigned>(getpid()));
  while (JournalMode(db) != "wal") {
    if (db.ExecuteUnlessBusy("PRAGMA journal_mode = WAL")) {
      const std::string mode = JournalMode(db);
      if (mode == "wal") return;
      throw ResultsError(db.path(), "cannot switch to WAL journal mode (SQLite kept '" + mode +
                                        "'); is the file on a local file system?");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw ResultsError(db.path(), "cannot switch to WAL journal mode: database is locked");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + jitter() % 20));
  }
}

RunRow ReadRun(const SqliteStatement& row) {
  RunRow run;
  run.id = row.ColumnInt64(0);
  run.experiment_id = row.ColumnInt64(1);
  run.cell_hash = row.ColumnText(2);
  run.cell_index = row.ColumnInt64(3);
  run.repeat = row.ColumnInt64(4);
  run.seed = row.ColumnOptionalInt64(5);
  // The CHECK constraint admits only known names.
  run.status = ParseRunStatus(row.ColumnText(6)).value_or(RunStatus::kFailed);
  run.error = row.ColumnText(7);
  run.config_json = row.ColumnText(8);
  run.params_json = row.ColumnText(9);
  run.started_at = row.ColumnText(10);
  run.finished_at = row.ColumnText(11);
  run.worker_pid = row.ColumnOptionalInt64(12);
  if (row.ColumnKind(13) != ValueKind::kNull) run.reference_hash = row.ColumnText(13);
  return run;
}

ExperimentRow ReadExperiment(const SqliteStatement& row) {
  ExperimentRow experiment;
  experiment.id = row.ColumnInt64(0);
  experiment.name = row.ColumnText(1);
  experiment.source_path = row.ColumnText(2);
  experiment.file_text = row.ColumnText(3);
  experiment.created_at = row.ColumnText(4);
  return experiment;
}

// `kind` must be read before the value: reading converts it.
std::optional<std::string> ValueText(const SqliteStatement& row, int column, ValueKind kind) {
  switch (kind) {
    case ValueKind::kNull: return std::nullopt;
    case ValueKind::kInteger: return std::to_string(row.ColumnInt64(column));
    case ValueKind::kReal: return RealToText(row.ColumnDouble(column));
    case ValueKind::kText: return row.ColumnText(column);
    case ValueKind::kBlob: break;
  }
  static const char kHex[] = "0123456789ABCDEF";
  std::string text = "X'";
  for (unsigned char byte : row.ColumnText(column)) {
    text += kHex[byte >> 4];
    text += kHex[byte & 15];
  }
  return text + "'";
}

// The cell's columns bound to ?1 (experiment id) ... ?7 (params_json), ?8 (reference_hash).
void BindCell(SqliteStatement& statement, int64_t experiment_id, const CellInfo& cell) {
  statement.BindInt64(1, experiment_id);
  statement.BindText(2, cell.cell_hash);
  statement.BindInt64(3, cell.cell_index);
  statement.BindInt64(4, cell.repeat);
  statement.BindOptionalInt64(5, cell.seed);
  statement.BindText(6, cell.config_json);
  statement.BindText(7, cell.params_json);
  if (cell.reference_hash) {
    statement.BindText(8, *cell.reference_hash);
  } else {
    statement.BindNull(8);
  }
}

}  // namespace

ResultsDb::ResultsDb(const std::string& path, Mode mode) : db_(OpenConnection(path, mode)) {
  db_.Execute("PRAGMA foreign_keys = ON");
  if (mode == Mode::kReadOnly) {
    db_.Execute("PRAGMA query_only = ON");
    CheckSchemaVersion(db_, kSchemaVersion);
    db_.DenyChanges();
    return;
  }
  RefuseNewerSchema(db_, SchemaMigrations());  // before WAL: a newer file stays as it was
  EnableWriteAheadLog(db_);
  db_.Execute("PRAGMA synchronous = FULL");  // a committed run survives a power loss
  MigrateSchema(db_, SchemaMigrations(), SchemaViews());
}

int64_t ResultsDb::EnsureExperiment(const std::string& name, const std::string& source_path,
                                    const std::string& file_text) {
  ImmediateTransaction transaction(db_);
  SqliteStatement find = db_.Prepare(
      "SELECT id FROM experiments WHERE name = ?1 AND file_text = ?2 ORDER BY id LIMIT 1");
  find.BindText(1, name);
  find.BindText(2, file_text);
  if (find.Step()) return find.ColumnInt64(0);  // nothing written: the rollback is harmless

  SqliteStatement insert =
      db_.Prepare("INSERT INTO experiments (name, source_path, file_text) VALUES (?1, ?2, ?3)");
  insert.BindText(1, name);
  insert.BindText(2, source_path);
  insert.BindText(3, file_text);
  insert.Run();
  const int64_t id = db_.LastInsertRowId();
  transaction.Commit();
  return id;
}

std::optional<ExperimentRow> ResultsDb::FindExperiment(int64_t experiment_id) {
  SqliteStatement find =
      db_.Prepare(std::string("SELECT ") + kExperimentColumns + " FROM experiments WHERE id = ?1");
  find.BindInt64(1, experiment_id);
  if (!find.Step()) return std::nullopt;
  return ReadExperiment(find);
}

std::optional<ExperimentRow> ResultsDb::LatestExperiment(const std::string& name) {
  SqliteStatement find = db_.Prepare(std::string("SELECT ") + kExperimentColumns +
                                     " FROM experiments WHERE ?1 = '' OR name = ?1"
                                     " ORDER BY created_at DESC, id DESC LIMIT 1");
  find.BindText(1, name);
  if (!find.Step()) return std::nullopt;
  return ReadExperiment(find);
}

std::vector<int64_t> ResultsDb::AddPendingRuns(int64_t experiment_id,
                                               const std::vector<CellInfo>& cells) {
  ImmediateTransaction transaction(db_);
  SqliteStatement insert = db_.Prepare(
      "INSERT INTO runs (experiment_id, cell_hash, cell_index, repeat, seed, config_json, "
      "params_json, reference_hash, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending') "
      "ON CONFLICT (experiment_id, cell_hash) DO UPDATE SET "
      "reference_hash = excluded.reference_hash");
  SqliteStatement find =
      db_.Prepare("SELECT id FROM runs WHERE experiment_id = ?1 AND cell_hash = ?2");
  std::vector<int64_t> ids;
  for (const CellInfo& cell : cells) {
    BindCell(insert, experiment_id, cell);
    insert.Run();
    find.BindInt64(1, experiment_id);
    find.BindText(2, cell.cell_hash);
    find.Step();
    ids.push_back(find.ColumnInt64(0));
    find.Reset();
  }
  UpdateExperimentVerification(db_, experiment_id);
  transaction.Commit();
  return ids;
}

std::optional<RunRow> ResultsDb::FindRun(int64_t experiment_id, const std::string& cell_hash) {
  SqliteStatement find = db_.Prepare(std::string("SELECT ") + kRunColumns +
                                     " FROM runs WHERE experiment_id = ?1 AND cell_hash = ?2");
  find.BindInt64(1, experiment_id);
  find.BindText(2, cell_hash);
  if (!find.Step()) return std::nullopt;
  return ReadRun(find);
}

std::optional<RunRow> ResultsDb::FindRun(int64_t run_id) {
  SqliteStatement find =
      db_.Prepare(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1");
  find.BindInt64(1, run_id);
  if (!find.Step()) return std::nullopt;
  return ReadRun(find);
}

int64_t ResultsDb::ClaimRun(int64_t experiment_id, const CellInfo& cell, int64_t worker_pid) {
  ImmediateTransaction transaction(db_);
  SqliteStatement upsert = db_.Prepare(
      std::string("INSERT INTO runs (experiment_id, cell_hash, cell_index, repeat, seed, "
                  "config_json, params_json, reference_hash, worker_pid, status, started_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'running', ") +
      kNowSql +
      ") ON CONFLICT (experiment_id, cell_hash) DO UPDATE SET "
      "cell_index = excluded.cell_index, repeat = excluded.repeat, seed = excluded.seed, "
      "config_json = excluded.config_json, params_json = excluded.params_json, "
      "reference_hash = excluded.reference_hash, worker_pid = excluded.worker_pid, status = 'running', error = NULL, "
      "started_at = excluded.started_at, finished_at = NULL "
      "RETURNING id");
  BindCell(upsert, experiment_id, cell);
  upsert.BindInt64(9, worker_pid);
  if (!upsert.Step()) throw ResultsError(path(), "claiming cell " + cell.cell_hash + " failed");
  const int64_t run_id = upsert.ColumnInt64(0);
  upsert.Reset();
  DeleteRunDetails(db_, run_id);
  UpdateRunVerification(db_, run_id);
  transaction.Commit();
  return run_id;
}

QueryResult ResultsDb::CellOutcomes(int64_t experiment_id) {
  return Query(
      "SELECT cell_index AS cell, repeat, status, params, "
      "CASE WHEN status = 'ok' THEN printf('%.2f MiB', peak_allocated_bytes / 1048576.0) END "
      "AS peak_allocated, "
      "CASE WHEN status = 'ok' THEN printf('%.2f MiB', peak_reserved_bytes / 1048576.0) END "
      "AS peak_reserved, "
      "CASE WHEN status = 'ok' THEN printf('%.1f', tokens_per_s) END AS tokens_per_s, "
      "CASE WHEN status = 'ok' THEN printf('%.4f', final_loss) END AS final_loss, "
      "verdict, "
      "substr(replace(error, char(10), ' '), 1, 60) AS error "
      "FROM run_summary WHERE run_id IN (SELECT id FROM runs WHERE experiment_id = ?1) "
      "ORDER BY cell_index, repeat",
      {std::to_string(experiment_id)});
}

void ResultsDb::ReturnToPending(int64_t run_id) {
  SqliteStatement update =
      db_.Prepare("UPDATE runs SET status = 'pending', worker_pid = NULL WHERE id = ?1");
  update.BindInt64(1, run_id);
  update.Step();
}

void ResultsDb::FinishRun(int64_t run_id, RunStatus status, const std::string& error,
                          const nlohmann::json* result, const nlohmann::json* estimate) {
  ImmediateTransaction transaction(db_);
  SqliteStatement update = db_.Prepare(std::string("UPDATE runs SET status = ?2, error = ?3, "
                                                   "finished_at = ") +
                                       kNowSql + " WHERE id = ?1 RETURNING id");
  update.BindInt64(1, run_id);
  update.BindText(2, RunStatusName(status));
  update.BindTextOrNull(3, error);
  if (!update.Step()) throw ResultsError(path(), "no run with id " + std::to_string(run_id));
  update.Reset();
  DeleteRunDetails(db_, run_id);
  if (result != nullptr) StoreRunDetails(db_, run_id, *result);
  if (estimate != nullptr) StoreRunEstimate(db_, run_id, *estimate);
  UpdateRunVerification(db_, run_id);
  transaction.Commit();
}

std::vector<RunRow> ResultsDb::Runs(int64_t experiment_id) {
  SqliteStatement select = db_.Prepare(std::string("SELECT ") + kRunColumns +
                                       " FROM runs WHERE experiment_id = ?1"
                                       " ORDER BY cell_index, repeat, id");
  select.BindInt64(1, experiment_id);
  std::vector<RunRow> runs;
  while (select.Step()) runs.push_back(ReadRun(select));
  return runs;
}

std::optional<StoredMemorySnapshot> ResultsDb::FindMemorySnapshot(int64_t run_id) {
  SqliteStatement select =
      db_.Prepare("SELECT format, events, bytes FROM memory_snapshots WHERE run_id = ?1");
  select.BindInt64(1, run_id);
  if (!select.Step()) return std::nullopt;
  return StoredMemorySnapshot{select.ColumnText(0), select.ColumnInt64(1), select.ColumnBlob(2)};
}

RunEvidence ResultsDb::LoadEvidence(int64_t run_id) { return LoadRunEvidence(db_, run_id); }

QueryResult ResultsDb::Query(const std::string& sql, const std::vector<std::string>& parameters) {
  SqliteStatement statement = db_.Prepare(sql);
  for (size_t i = 0; i < parameters.size(); ++i) {
    statement.BindText(static_cast<int>(i + 1), parameters[i]);
  }
  QueryResult result;
  const int columns = statement.ColumnCount();
  for (int column = 0; column < columns; ++column) {
    result.columns.push_back(statement.ColumnName(column));
  }
  while (statement.Step()) {
    std::vector<std::optional<std::string>> values;
    std::vector<ValueKind> kinds;
    for (int column = 0; column < columns; ++column) {
      const ValueKind kind = statement.ColumnKind(column);
      values.push_back(ValueText(statement, column, kind));
      kinds.push_back(kind);
    }
    result.AddRow(std::move(values), std::move(kinds));
  }
  return result;
}

}  // namespace memsweep::results
