// memory_snapshots: the allocation history a worker names in its result is stored with the run's
// other figures, in the same transaction; a run without one stores nothing; a named file that is
// missing fails the whole transaction.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "core/results/results_error.h"
#include "support/results_db_fixtures.h"

namespace memsweep::results {
namespace {

using testing_support::FiguresResult;
using testing_support::FreshDbPath;
using testing_support::MakeCell;

// Bytes with a NUL and high bytes: stored as a BLOB, not text.
const std::string kBytes = std::string("\x80\x02}q\x00(X\x08", 8) + "segments" + "\xff.";

nlohmann::json ResultNaming(const std::string& file) {
  nlohmann::json result = FiguresResult("ok", 1000, 1000, 1.0, 2.0);
  result["memory_snapshot"] = {{"file", file}, {"format", "pytorch_memory_snapshot"}, {"events", 42}};
  return result;
}

TEST(ResultsDbMemorySnapshot, StoresTheNamedFileWithTheRun) {
  const std::string path = FreshDbPath();
  const std::string file = path + ".snapshot.pickle";
  std::ofstream(file, std::ios::binary) << kBytes;
  ResultsDb db(path, ResultsDb::Mode::kReadWrite);
  const int64_t experiment = db.EnsureExperiment("e", "e.toml", "");
  const int64_t run = db.ClaimRun(experiment, MakeCell("a", 0), 1);
  const nlohmann::json result = ResultNaming(file);
  db.FinishRun(run, RunStatus::kOk, "", &result);
  const auto stored = db.FindMemorySnapshot(run);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->bytes, kBytes);
  EXPECT_EQ(stored->events, 42);
  EXPECT_EQ(stored->format, "pytorch_memory_snapshot");
  // Claiming the run again (a rerun) deletes it with the other figures.
  db.ClaimRun(experiment, MakeCell("a", 0), 1);
  EXPECT_FALSE(db.FindMemorySnapshot(run).has_value());
}

TEST(ResultsDbMemorySnapshot, ARunWithoutHistoryStoresNone) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  const int64_t experiment = db.EnsureExperiment("e", "e.toml", "");
  const int64_t run = db.ClaimRun(experiment, MakeCell("a", 0), 1);
  const nlohmann::json result = FiguresResult("ok", 1000, 1000, 1.0, 2.0);
  db.FinishRun(run, RunStatus::kOk, "", &result);
  EXPECT_FALSE(db.FindMemorySnapshot(run).has_value());
  EXPECT_EQ(db.Query("SELECT count(*) FROM memory_snapshots").rows[0][0].value_or(""), "0");
}

TEST(ResultsDbMemorySnapshot, AMissingNamedFileFailsTheWholeTransaction) {
  const std::string path = FreshDbPath();
  ResultsDb db(path, ResultsDb::Mode::kReadWrite);
  const int64_t experiment = db.EnsureExperiment("e", "e.toml", "");
  const int64_t run = db.ClaimRun(experiment, MakeCell("a", 0), 1);
  const nlohmann::json result = ResultNaming(path + ".absent.pickle");
  try {
    db.FinishRun(run, RunStatus::kOk, "", &result);
    FAIL() << "FinishRun stored a run whose named allocation history is missing";
  } catch (const ResultsError& e) {
    EXPECT_NE(std::string(e.what()).find(".absent.pickle"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db.FindRun(run)->status, RunStatus::kRunning);  // rolled back: no figures, no status
  EXPECT_EQ(db.Query("SELECT count(*) FROM run_metrics").rows[0][0].value_or(""), "0");
}

}  // namespace
}  // namespace memsweep::results
