// What the runner takes from a worker's result file: only a JSON object counts, its status and
// error only when they are strings, and a result the database refuses fails only its own cell.
#include "core/sweep/worker_result.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/results_db_fixtures.h"

namespace memsweep::sweep {
namespace {

using nlohmann::json;
using results::ResultsDb;
using results::RunStatus;
using testing_support::FreshDbPath;
using testing_support::MakeCell;
using testing_support::QueryCount;
using testing_support::QueryValue;
using testing_support::RecordedRunResult;

std::string WriteText(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(FreshDbPath()).parent_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(WorkerResultTest, OnlyAJsonObjectIsAResult) {
  EXPECT_FALSE(ReadWorkerResult("/nonexistent/result.json"));
  EXPECT_FALSE(ReadWorkerResult(WriteText("bad.json", "{\"status\": \"ok\"")));  // cut short
  EXPECT_FALSE(ReadWorkerResult(WriteText("array.json", "[1, 2]")));
  EXPECT_FALSE(ReadWorkerResult(WriteText("number.json", "3")));
  const auto result = ReadWorkerResult(WriteText("ok.json", "{\"status\": \"ok\"}"));
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["status"], "ok");
}

TEST(WorkerResultTest, StatusAndErrorCountOnlyAsStrings) {
  EXPECT_EQ(StatusOfResult({{"status", "ok"}}).status, RunStatus::kOk);
  EXPECT_EQ(StatusOfResult({{"status", "oom"}, {"error", "x"}}).status, RunStatus::kOom);
  EXPECT_EQ(StatusOfResult({{"status", "oom"}, {"error", "x"}}).error, "x");
  EXPECT_EQ(StatusOfResult({{"status", "done"}}).status, RunStatus::kFailed);
  EXPECT_EQ(StatusOfResult({{"status", 1}, {"error", {1, 2}}}).status, RunStatus::kFailed);
  EXPECT_EQ(StatusOfResult({{"status", 1}, {"error", {1, 2}}}).error, "");
  EXPECT_EQ(StatusOfResult(json::array()).status, RunStatus::kFailed);
  EXPECT_EQ(TextIn({{"device", {{"device", "cuda:0"}}}}, "device", "device"), "cuda:0");
  EXPECT_EQ(TextIn({{"device", "cuda:0"}}, "device", "device"), "");
  EXPECT_EQ(TextIn({{"device", {{"device", 0}}}}, "device", "device"), "");
}

TEST(WorkerResultTest, AResultTheDatabaseRefusesFailsOnlyItsCell) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  const int64_t experiment = db.EnsureExperiment("e", "e.toml", "");
  // Two steps numbered alike: step_metrics' key refuses the second.
  json result = RecordedRunResult();
  ASSERT_GE(result["steps"].size(), 2u);
  result["steps"][1]["step"] = result["steps"][0]["step"];
  const int64_t bad = db.ClaimRun(experiment, MakeCell("bad", 0), 1);
  RecordOutcome(db, bad, RunStatus::kOk, "", &result, nullptr);
  EXPECT_EQ(QueryValue(db, "SELECT status FROM runs WHERE id = " + std::to_string(bad)), "failed");
  const std::string error =
      QueryValue(db, "SELECT error FROM runs WHERE id = " + std::to_string(bad)).value_or("");
  EXPECT_NE(error.find("its result could not be stored (status ok)"), std::string::npos) << error;
  EXPECT_NE(error.find("UNIQUE constraint failed: step_metrics"), std::string::npos) << error;
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM step_metrics"), 0);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM run_metrics"), 0);

  // A history file the result names that is not there.
  json missing = RecordedRunResult();
  missing["memory_snapshot"] = {{"file", "/nonexistent/history.pickle"}, {"events", 1}};
  const int64_t no_history = db.ClaimRun(experiment, MakeCell("history", 1), 1);
  RecordOutcome(db, no_history, RunStatus::kOk, "", &missing, nullptr);
  EXPECT_EQ(QueryValue(db, "SELECT status FROM runs WHERE id = " + std::to_string(no_history)),
            "failed");

  // The database takes the next run whole.
  const json good = RecordedRunResult();
  const int64_t next = db.ClaimRun(experiment, MakeCell("good", 2), 1);
  RecordOutcome(db, next, RunStatus::kOk, "", &good, nullptr);
  EXPECT_EQ(QueryValue(db, "SELECT status FROM runs WHERE id = " + std::to_string(next)), "ok");
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM step_metrics WHERE run_id = " +
                               std::to_string(next)),
            static_cast<int64_t>(good["steps"].size()));
}

}  // namespace
}  // namespace memsweep::sweep
