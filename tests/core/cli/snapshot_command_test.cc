// memsweep snapshot: a real quickstart cell run with [experiment] memory_history, written as the
// pickle PyTorch's memory viewer opens, read back by Python's plain pickle (no torch) and replayed
// to the run's recorded peak; and the refusals (exit 2, nothing written).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "support/cli_runner.h"
#include "support/results_db_fixtures.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {
namespace {

namespace fs = std::filesystem;

// python3 -S: without site-packages, so the pickle must load without torch.
Outcome CheckWithPython(const fs::path& pickle, int64_t expected_peak) {
  return RunShell("python3 -S " + SourcePath("tests/tools/check_memory_snapshot.py") + " " +
                  pickle.string() + " " + std::to_string(expected_peak));
}

// A database with one ok run that recorded no history.
fs::path DbWithoutHistory(const fs::path& dir) {
  const fs::path path = dir / "r.db";
  results::ResultsDb db(path.string(), results::ResultsDb::Mode::kReadWrite);
  const int64_t experiment = db.EnsureExperiment("e", "e.toml", "");
  const int64_t run = db.ClaimRun(experiment, MakeCell("a", 0), 1);
  const nlohmann::json result = FiguresResult("ok", 1000, 1000, 1.0, 2.0);
  db.FinishRun(run, results::RunStatus::kOk, "", &result);
  return path;
}

TEST(SnapshotCommand, AQuickstartRunOpensInPlainPythonAndReplaysToItsPeak) {
  const fs::path dir = FreshTempDir("snapshot_quickstart");
  const fs::path db = dir / "r.db";
  const Outcome run = RunMemsweep(
      "run " + SourcePath("experiments/quickstart.toml") + " --db " + db.string() +
      " --no-estimate --set experiment.steps=2 --set experiment.warmup_steps=1"
      " --set strategies.batching.micro_batch_size=2 --set 'device.memory_budget=\"64MiB\"'"
      " --set experiment.memory_history=1000000");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const results::QueryResult rows =
      results::ResultsDb(db.string(), results::ResultsDb::Mode::kReadOnly)
          .Query("SELECT s.run_id, s.peak_allocated_bytes, m.events FROM run_summary AS s "
                 "JOIN memory_snapshots AS m ON m.run_id = s.run_id");
  ASSERT_EQ(rows.rows.size(), 1u) << run.output;
  const std::string run_id = rows.rows[0][0].value_or("");
  const int64_t peak = std::stoll(rows.rows[0][1].value_or("0"));
  EXPECT_GT(std::stoll(rows.rows[0][2].value_or("0")), 0);
  EXPECT_GT(peak, 0);

  const fs::path out = dir / "run.pickle";
  const Outcome snapshot = RunMemsweep("snapshot " + run_id + " --db " + db.string() + " -o " +
                                       out.string());
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.output;
  EXPECT_NE(snapshot.output.find("pytorch.org/memory_viz"), std::string::npos) << snapshot.output;
  ASSERT_TRUE(fs::exists(out));
  const Outcome check = CheckWithPython(out, peak);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  std::printf("%s", check.output.c_str());  // the replay's summary line, for the record
  // The worker's file went with the sweep's work folder: the database is the one copy.
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    EXPECT_NE(entry.path().extension(), ".partial") << entry.path();
    if (entry.path() != out) EXPECT_NE(entry.path().extension(), ".pickle") << entry.path();
  }
}

TEST(SnapshotCommand, ARunWithoutHistoryExitsTwoSayingHowToRecordOne) {
  const fs::path dir = FreshTempDir("snapshot_none");
  const fs::path db = DbWithoutHistory(dir);
  const fs::path out = dir / "run.pickle";
  const Outcome o = RunMemsweep("snapshot 1 --db " + db.string() + " -o " + out.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_NE(o.output.find("run 1 has no allocation history"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("memory_history = "), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST(SnapshotCommand, AnUnknownRunExitsTwo) {
  const fs::path dir = FreshTempDir("snapshot_unknown");
  const fs::path db = DbWithoutHistory(dir);
  const fs::path out = dir / "run.pickle";
  const Outcome o = RunMemsweep("snapshot 99 --db " + db.string() + " -o " + out.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_NE(o.output.find("has no run 99"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST(SnapshotCommand, AnUnwritableOutputExitsTwoAndWritesNothing) {
  const fs::path dir = FreshTempDir("snapshot_unwritable");
  const fs::path db = dir / "r.db";
  {
    results::ResultsDb writer(db.string(), results::ResultsDb::Mode::kReadWrite);
    const int64_t experiment = writer.EnsureExperiment("e", "e.toml", "");
    const int64_t run = writer.ClaimRun(experiment, MakeCell("a", 0), 1);
    const fs::path file = dir / "history.pickle";
    std::ofstream(file, std::ios::binary) << "\x80\x02}q\x00.";
    nlohmann::json result = FiguresResult("ok", 1000, 1000, 1.0, 2.0);
    result["memory_snapshot"] = {{"file", file.string()}, {"format", "pytorch_memory_snapshot"},
                                 {"events", 0}};
    writer.FinishRun(run, results::RunStatus::kOk, "", &result);
  }
  const fs::path out = dir / "no-such-folder" / "run.pickle";
  const Outcome o = RunMemsweep("snapshot 1 --db " + db.string() + " -o " + out.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_NE(o.output.find("cannot write " + out.string()), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(out.parent_path()));
}

}  // namespace
}  // namespace memsweep::testing_support
