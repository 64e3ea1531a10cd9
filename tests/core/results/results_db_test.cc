// ResultsDb: schema and migrations, storing a whole run, re-claiming a cell, runs without a
// result, read-only access.
#include "core/results/results_db.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/schema.h"
#include "core/results/sqlite_handles.h"
#include "support/results_db_fixtures.h"

namespace memsweep::results {
namespace {

using nlohmann::json;
using testing_support::FreshDbPath;
using testing_support::MakeCell;
using testing_support::QueryCount;
using testing_support::QueryValue;
using testing_support::RecordedRunResult;

constexpr int64_t kWorkerPid = 4242;

int64_t UserVersion(const std::string& path) {
  SqliteConnection db(path, SqliteConnection::Access::kReadOnly);
  return db.IntegerPragma("user_version");
}

void SetUserVersion(const std::string& path, int64_t version) {
  SqliteConnection db(path, SqliteConnection::Access::kReadWrite);
  db.Execute("PRAGMA user_version = " + std::to_string(version));
}

template <typename Body>
std::string ErrorOf(Body body) {
  try {
    body();
  } catch (const ResultsError& e) {
    return e.what();
  }
  return "(no ResultsError)";
}

TEST(ResultsDbTest, CreatesDirectoryAndSchemaAtCurrentVersion) {
  const std::string path =
      (std::filesystem::path(FreshDbPath()).parent_path() / "nested/dir/memsweep.db").string();
  {
    ResultsDb db(path, ResultsDb::Mode::kReadWrite);
    EXPECT_EQ(QueryValue(db, "PRAGMA journal_mode"), "wal");
    EXPECT_EQ(QueryValue(db, "PRAGMA foreign_keys"), "1");
    const QueryResult tables =
        db.Query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name");
    std::vector<std::string> names;
    for (const auto& row : tables.rows) names.push_back(*row[0]);
    EXPECT_EQ(names, (std::vector<std::string>{"environments", "experiments",
                                               "memory_snapshots", "memory_timeline",
                                               "phase_memory", "plugin_metrics",
                                               "run_estimates", "run_metrics", "run_plugins",
                                               "run_ranks",
                                               "run_summary", "runs", "step_metrics",
                                               "step_plugin_metrics", "verification"}));
  }
  EXPECT_EQ(UserVersion(path), kSchemaVersion);
  EXPECT_EQ(kSchemaVersion, SchemaMigrations().back().version);
}

TEST(ResultsDbTest, MigratesAVersionZeroFile) {
  const std::string path = FreshDbPath();
  std::ofstream(path).close();  // an empty file is an empty SQLite database, user_version 0
  ResultsDb db(path, ResultsDb::Mode::kReadWrite);
  EXPECT_EQ(QueryValue(db, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM run_summary"), 0);
}

TEST(ResultsDbTest, MigrationsApplyOnlyTheMissingStepsAndKeepData) {
  const std::string path = FreshDbPath();
  const std::vector<Migration> version1 = {{1, "CREATE TABLE t (a INTEGER)"}};
  const std::vector<Migration> version2 = {
      {1, "CREATE TABLE t (a INTEGER)"},
      {2, "ALTER TABLE t ADD COLUMN b INTEGER NOT NULL DEFAULT 7; CREATE INDEX t_by_b ON t(b)"}};
  SqliteConnection db(path, SqliteConnection::Access::kReadWriteCreate);
  MigrateSchema(db, version1);
  db.Execute("INSERT INTO t (a) VALUES (1)");
  EXPECT_EQ(db.IntegerPragma("user_version"), 1);

  MigrateSchema(db, version2);  // would fail if step 1 ran again (table t exists)
  EXPECT_EQ(db.IntegerPragma("user_version"), 2);
  SqliteStatement row = db.Prepare("SELECT a, b FROM t");
  ASSERT_TRUE(row.Step());
  EXPECT_EQ(row.ColumnInt64(0), 1);
  EXPECT_EQ(row.ColumnInt64(1), 7);

  MigrateSchema(db, version2);  // already current: nothing to do
  EXPECT_EQ(db.IntegerPragma("user_version"), 2);
  const std::string error = ErrorOf([&] { MigrateSchema(db, version1); });
  EXPECT_NE(error.find("schema version 2 is newer than this memsweep knows (1)"), std::string::npos)
      << error;
}

TEST(ResultsDbTest, RefusesADatabaseNewerThanThisBinary) {
  const std::string path = FreshDbPath();
  { ResultsDb db(path, ResultsDb::Mode::kReadWrite); }
  SetUserVersion(path, kSchemaVersion + 1);
  for (ResultsDb::Mode mode : {ResultsDb::Mode::kReadWrite, ResultsDb::Mode::kReadOnly}) {
    const std::string error = ErrorOf([&] { ResultsDb db(path, mode); });
    EXPECT_EQ(error.rfind(path + ": schema version " + std::to_string(kSchemaVersion + 1) +
                              " is newer than this memsweep knows",
                          0),
              0u)
        << error;
  }
  EXPECT_EQ(UserVersion(path), kSchemaVersion + 1);  // left untouched
}

TEST(ResultsDbTest, ReadOnlyNeedsAnExistingMemsweepDatabase) {
  const std::string path = FreshDbPath();
  std::string error = ErrorOf([&] { ResultsDb db(path, ResultsDb::Mode::kReadOnly); });
  EXPECT_EQ(error, path + ": no such results database (run a sweep first, or pass --db)");
  EXPECT_FALSE(std::filesystem::exists(path));

  std::ofstream(path).close();
  error = ErrorOf([&] { ResultsDb db(path, ResultsDb::Mode::kReadOnly); });
  EXPECT_NE(error.find("not a memsweep results database"), std::string::npos) << error;

  std::ofstream(path) << std::string(4096, 'x');  // not SQLite
  error = ErrorOf([&] { ResultsDb db(path, ResultsDb::Mode::kReadOnly); });
  EXPECT_NE(error.find("file is not a database"), std::string::npos) << error;
}

TEST(ResultsDbTest, ReadOnlyRejectsWrites) {
  const std::string path = FreshDbPath();
  {
    ResultsDb db(path, ResultsDb::Mode::kReadWrite);
    db.EnsureExperiment("e", "e.toml", "text");
  }
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM experiments"), 1);
  for (const char* sql :
       {"INSERT INTO experiments (name, source_path, file_text) VALUES "
        "('x', 'x', 'x')",
        "DELETE FROM experiments", "DROP TABLE runs"}) {
    const std::string error = ErrorOf([&] { db.Query(sql); });
    EXPECT_NE(error.find("readonly"), std::string::npos) << sql << ": " << error;
  }
  EXPECT_NE(ErrorOf([&] { db.EnsureExperiment("f", "f.toml", "text"); }).find("readonly"),
            std::string::npos);
  // Nothing that could open another file or lift the read-only settings gets prepared.
  const std::string other = path + ".other";
  for (const std::string& sql :
       {"ATTACH '" + other + "' AS x", "ATTACH '" + path + "' AS again", std::string("DETACH main"),
        std::string("PRAGMA query_only = OFF"), std::string("PRAGMA writable_schema = ON"),
        std::string("PRAGMA journal_mode = DELETE"), std::string("PRAGMA foreign_keys = OFF"),
        std::string("PRAGMA user_version = 9")}) {
    const std::string error = ErrorOf([&] { db.Query(sql); });
    EXPECT_NE(error.find("not authorized"), std::string::npos) << sql << ": " << error;
  }
  EXPECT_FALSE(std::filesystem::exists(other));
  EXPECT_EQ(QueryValue(db, "PRAGMA query_only"), "1");
  EXPECT_EQ(QueryValue(db, "PRAGMA writable_schema"), "0");
  // Reading pragmas still answer.
  EXPECT_GT(QueryCount(db, "SELECT count(*) FROM pragma_table_info('runs')"), 5);
  EXPECT_EQ(QueryValue(db, "PRAGMA table_info(experiments)"), "0");
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM experiments"), 1);
  EXPECT_EQ(UserVersion(path), kSchemaVersion);
}

TEST(ResultsDbTest, QueryErrorsNameTheFileAndTheStatement) {
  const std::string path = FreshDbPath();
  ResultsDb db(path, ResultsDb::Mode::kReadWrite);
  EXPECT_EQ(ErrorOf([&] { db.Query("SELECT nope FROM run_summary"); }),
            path + ": no such column: nope (in: SELECT nope FROM run_summary)");
  EXPECT_NE(ErrorOf([&] { db.Query("SELEC 1"); }).find("syntax error"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { db.Query("SELECT 1; SELECT 2"); }).find("expected one SQL statement"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { db.Query("  "); }).find("empty SQL statement"), std::string::npos);
  EXPECT_EQ(db.Query("SELECT 1; -- a comment").rows.size(), 1u);
  const QueryResult bound = db.Query("SELECT ?1 || ?2", {"a", "b"});
  EXPECT_EQ(bound.rows[0][0], "ab");
}

TEST(ResultsDbTest, AnEditedExperimentFileIsANewExperiment) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  const int64_t first = db.EnsureExperiment("ablation", "a.toml", "steps = 3");
  EXPECT_EQ(db.EnsureExperiment("ablation", "elsewhere/a.toml", "steps = 3"), first);
  const int64_t edited = db.EnsureExperiment("ablation", "a.toml", "steps = 4");
  const int64_t other = db.EnsureExperiment("other", "o.toml", "steps = 3");
  EXPECT_NE(edited, first);
  EXPECT_NE(other, edited);
  EXPECT_EQ(db.FindExperiment(first)->source_path, "a.toml");
  EXPECT_EQ(db.FindExperiment(edited)->file_text, "steps = 4");
  EXPECT_EQ(db.LatestExperiment("ablation")->id, edited);
  EXPECT_EQ(db.LatestExperiment()->id, other);
  EXPECT_FALSE(db.LatestExperiment("missing").has_value());
  EXPECT_FALSE(db.FindExperiment(999).has_value());
}

// run_summary has the host pool's peak (offloaded state) and whether the run's MFU stands; a
// database of version 6 migrates, its runs keeping their figures (NULL where none was recorded).
TEST(ResultsDbTest, RunSummaryHasTheHostPoolPeakAndTheMfuCheckAfterMigration) {
  const std::string path = FreshDbPath();
  {
    SqliteConnection old(path, SqliteConnection::Access::kReadWriteCreate);
    const std::vector<Migration> up_to_6(SchemaMigrations().begin(),
                                         SchemaMigrations().begin() + 6);
    MigrateSchema(old, up_to_6);
    ASSERT_EQ(old.IntegerPragma("user_version"), 6);
    old.Execute(
        "INSERT INTO experiments (id, name, source_path, file_text) VALUES (1, 'old', 'o', '');"
        "INSERT INTO runs (id, experiment_id, cell_hash, cell_index, status) "
        "VALUES (1, 1, 'h', 0, 'ok');"
        "INSERT INTO run_metrics (run_id, peak_rss_bytes, host_pool_peak_bytes, mfu) "
        "VALUES (1, 2000, 1234, 0.5);");
  }
  ResultsDb db(path, ResultsDb::Mode::kReadWrite);
  EXPECT_EQ(UserVersion(path), kSchemaVersion);
  EXPECT_EQ(QueryValue(db, "SELECT host_pool_peak_bytes FROM run_summary WHERE run_id = 1"),
            "1234");
  EXPECT_EQ(QueryValue(db, "SELECT peak_flops_check FROM run_summary WHERE run_id = 1"),
            std::nullopt);

  json result = RecordedRunResult();
  result["memory"]["host_pool_peak_bytes"] = 5 << 20;
  result["summary"]["peak_flops_check"] = "remeasured";
  const int64_t experiment = db.EnsureExperiment("new", "n.toml", "[experiment]");
  const int64_t run = db.ClaimRun(experiment, MakeCell("hash1", 0), kWorkerPid);
  db.FinishRun(run, RunStatus::kOk, "", &result);
  const std::string where = " FROM run_summary WHERE run_id = " + std::to_string(run);
  EXPECT_EQ(QueryValue(db, "SELECT host_pool_peak_bytes" + where), std::to_string(5 << 20));
  EXPECT_EQ(QueryValue(db, "SELECT peak_flops_check" + where), "remeasured");
}

TEST(ResultsDbTest, FinishRunStoresEveryFigureOfTheResult) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  json result = RecordedRunResult();
  result["plugins"] = {{{"slot", "optimizer"}, {"name", "adamw"}, {"version", "1.0"}},
                       {{"slot", "checkpointing"}, {"name", "none"}, {"version", "0.1"}}};
  result["plugin_metrics"] = {{"empty_cache.seconds", 0.25}, {"empty_cache.calls", 3.0}};
  const int64_t experiment = db.EnsureExperiment("quickstart", "q.toml", "[experiment]");
  const int64_t run = db.ClaimRun(
      experiment, MakeCell("hash0", 0, 0, R"({"data.micro_batch_size":8})"), kWorkerPid);
  db.FinishRun(run, RunStatus::kOk, "", &result);

  const std::string where = " WHERE run_id = " + std::to_string(run);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM step_metrics" + where),
            static_cast<int64_t>(result["steps"].size()));
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM memory_timeline" + where),
            static_cast<int64_t>(result["timeline"].size()));
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM phase_memory" + where),
            static_cast<int64_t>(result["memory"]["phases"].size()));
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM run_plugins" + where), 2);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM environments" + where), 1);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM run_metrics" + where), 1);
  EXPECT_EQ(QueryValue(db, "SELECT value FROM plugin_metrics" + where +
                               " AND name = 'empty_cache.seconds'"),
            "0.25");
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM plugin_metrics" + where), 2);
  ASSERT_GE(result["steps"].size(), 3u);

  const QueryResult summary = db.Query("SELECT * FROM run_summary" + where);
  ASSERT_EQ(summary.rows.size(), 1u);
  const auto value = [&](const std::string& column) {
    for (size_t c = 0; c < summary.columns.size(); ++c) {
      if (summary.columns[c] == column) return summary.rows[0][c];
    }
    ADD_FAILURE() << "no column " << column;
    return std::optional<std::string>();
  };
  EXPECT_EQ(value("experiment"), "quickstart");
  EXPECT_EQ(value("cell_hash"), "hash0");
  EXPECT_EQ(value("status"), "ok");
  EXPECT_EQ(value("error"), std::nullopt);
  EXPECT_EQ(value("params"), R"({"data.micro_batch_size":8})");
  for (const char* column :
       {"peak_allocated_bytes", "peak_reserved_bytes", "peak_rss_bytes", "params_bytes",
        "grads_bytes", "optimizer_bytes", "activations_bytes"}) {
    EXPECT_EQ(std::stoll(value(column).value()), result["memory"][column].get<int64_t>()) << column;
  }
  for (const char* column :
       {"tokens_per_s", "mfu", "final_loss", "step_time_median_s", "padding_fraction"}) {
    EXPECT_EQ(std::strtod(value(column)->c_str(), nullptr), result["summary"][column].get<double>())
        << column;
  }

  const json& step = result["steps"][1];
  EXPECT_EQ(std::strtod(QueryValue(db, "SELECT loss FROM step_metrics" + where + " AND step = " +
                                           std::to_string(step["step"].get<int64_t>()))
                            ->c_str(),
                        nullptr),
            step["loss"].get<double>());
  EXPECT_EQ(QueryValue(db, "SELECT stage FROM memory_timeline" + where + " AND seq = 0"),
            result["timeline"][0]["stage"].get<std::string>());
  EXPECT_EQ(QueryValue(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM run_plugins" +
                               where + " ORDER BY seq)"),
            "adamw,none");
  EXPECT_EQ(QueryValue(db, "SELECT torch_version FROM environments" + where),
            result["environment"]["torch_version"].get<std::string>());

  const std::optional<RunRow> row = db.FindRun(experiment, "hash0");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->id, run);
  EXPECT_EQ(row->status, RunStatus::kOk);
  EXPECT_EQ(row->seed, 1000);
  EXPECT_EQ(row->worker_pid, kWorkerPid);
  EXPECT_FALSE(row->started_at.empty());
  EXPECT_FALSE(row->finished_at.empty());
  EXPECT_EQ(QueryValue(db, "PRAGMA foreign_key_check"), std::nullopt);
}

TEST(ResultsDbTest, ReclaimingACellResetsItsRowAndDeletesItsFigures) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  const json result = RecordedRunResult();
  const int64_t experiment = db.EnsureExperiment("quickstart", "q.toml", "[experiment]");
  const int64_t run = db.ClaimRun(experiment, MakeCell("hash0", 0), kWorkerPid);
  db.FinishRun(run, RunStatus::kFailed, "first attempt failed", &result);

  EXPECT_EQ(db.ClaimRun(experiment, MakeCell("hash0", 0), kWorkerPid + 1), run);
  std::optional<RunRow> row = db.FindRun(run);
  EXPECT_EQ(row->status, RunStatus::kRunning);
  EXPECT_EQ(row->error, "");
  EXPECT_EQ(row->finished_at, "");
  EXPECT_EQ(row->worker_pid, kWorkerPid + 1);
  for (const char* table : {"step_metrics", "memory_timeline", "phase_memory", "run_metrics",
                            "environments", "run_plugins"}) {
    EXPECT_EQ(QueryCount(db, std::string("SELECT count(*) FROM ") + table), 0) << table;
  }

  db.FinishRun(run, RunStatus::kOk, "", &result);
  db.FinishRun(run, RunStatus::kOk, "", &result);  // storing twice replaces, never duplicates
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM step_metrics"),
            static_cast<int64_t>(result["steps"].size()));
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM memory_timeline"),
            static_cast<int64_t>(result["timeline"].size()));
  EXPECT_EQ(db.Runs(experiment).size(), 1u);
}

TEST(ResultsDbTest, CrashedAndTimedOutRunsKeepOnlyTheirStatus) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  const json result = RecordedRunResult();
  const int64_t experiment = db.EnsureExperiment("quickstart", "q.toml", "[experiment]");
  const int64_t timed_out = db.ClaimRun(experiment, MakeCell("slow", 0), kWorkerPid);
  db.FinishRun(timed_out, RunStatus::kTimeout, "killed after 600 s", nullptr);
  // A cell that had figures from an earlier attempt, then crashed.
  const int64_t crashed = db.ClaimRun(experiment, MakeCell("crash", 1), kWorkerPid);
  db.FinishRun(crashed, RunStatus::kOk, "", &result);
  db.ClaimRun(experiment, MakeCell("crash", 1), kWorkerPid);
  db.FinishRun(crashed, RunStatus::kFailed, "worker died: signal 9", nullptr);

  const QueryResult rows = db.Query(
      "SELECT status, error, peak_allocated_bytes, tokens_per_s FROM run_summary ORDER BY run_id");
  ASSERT_EQ(rows.rows.size(), 2u);
  EXPECT_EQ(rows.rows[0][0], "timeout");
  EXPECT_EQ(rows.rows[0][1], "killed after 600 s");
  EXPECT_EQ(rows.rows[0][2], std::nullopt);
  EXPECT_EQ(rows.rows[1][0], "failed");
  EXPECT_EQ(rows.rows[1][1], "worker died: signal 9");
  EXPECT_EQ(rows.rows[1][3], std::nullopt);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM step_metrics"), 0);
  EXPECT_NE(ErrorOf([&] {
              db.FinishRun(12345, RunStatus::kOk, "", nullptr);
            }).find("no run with id 12345"),
            std::string::npos);
}

TEST(ResultsDbTest, PendingRunsAppearInTheSummaryAndKeepTheirIdsWhenClaimed) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  const int64_t experiment = db.EnsureExperiment("plan", "p.toml", "[experiment]");
  const std::vector<int64_t> ids =
      db.AddPendingRuns(experiment, {MakeCell("c0", 0), MakeCell("c1", 1), MakeCell("c2", 2)});
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(db.ClaimRun(experiment, MakeCell("c1", 1), kWorkerPid), ids[1]);
  // Planning again leaves claimed and finished cells alone.
  EXPECT_EQ(db.AddPendingRuns(experiment, {MakeCell("c1", 1), MakeCell("c3", 3)})[0], ids[1]);
  const QueryResult rows =
      db.Query("SELECT cell_hash, status FROM run_summary ORDER BY cell_index");
  ASSERT_EQ(rows.rows.size(), 4u);
  EXPECT_EQ(rows.rows[0][1], "pending");
  EXPECT_EQ(rows.rows[1][1], "running");
  EXPECT_EQ(rows.rows[3][0], "c3");
  const std::vector<RunRow> runs = db.Runs(experiment);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[2].cell_hash, "c2");
  EXPECT_EQ(runs[2].status, RunStatus::kPending);
}

TEST(ResultsDbTest, StatusNamesRoundTrip) {
  for (RunStatus status : {RunStatus::kPending, RunStatus::kRunning, RunStatus::kOk,
                           RunStatus::kOom, RunStatus::kFailed, RunStatus::kTimeout}) {
    EXPECT_EQ(ParseRunStatus(RunStatusName(status)), status);
  }
  EXPECT_FALSE(ParseRunStatus("done").has_value());
}

}  // namespace
}  // namespace memsweep::results

namespace memsweep::results {
namespace {

std::string ViewSql(const std::string& path) {
  SqliteConnection db(path, SqliteConnection::Access::kReadWriteCreate);
  SqliteStatement statement =
      db.Prepare("SELECT sql FROM sqlite_master WHERE type = 'view' AND name = 'run_summary'");
  return statement.Step() ? statement.ColumnText(0) : "";
}

// The views are declared once, as the current version has them: a file created by version 1
// and migrated gets the same run_summary as a new file (every column a run records reaches it,
// the rows a run trained included).
TEST(SchemaViewsTest, AMigratedFileHasTheSameViewsAsANewOne) {
  const std::string old_path = testing_support::FreshDbPath("old.db");
  {
    SqliteConnection v1(old_path, SqliteConnection::Access::kReadWriteCreate);
    MigrateSchema(v1, {SchemaMigrations().front()});
  }
  { ResultsDb migrating(old_path, ResultsDb::Mode::kReadWrite); }
  const std::string new_path =
      (std::filesystem::path(old_path).parent_path() / "new.db").string();
  { ResultsDb fresh(new_path, ResultsDb::Mode::kReadWrite); }
  const std::string fresh = ViewSql(new_path);
  EXPECT_NE(fresh.find("tokens_per_row"), std::string::npos) << fresh;
  EXPECT_EQ(ViewSql(old_path), fresh);
  for (const Migration& m : SchemaMigrations()) {
    EXPECT_EQ(std::string(m.sql).find("VIEW"), std::string::npos) << "migration " << m.version;
  }
}

}  // namespace
}  // namespace memsweep::results
