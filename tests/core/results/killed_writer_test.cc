// A writer killed with SIGKILL at an arbitrary moment leaves whole runs or none: every run is
// either still 'running' with no figures, or finished with all of them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/results/results_db.h"
#include "support/results_db_fixtures.h"

namespace memsweep::results {
namespace {

using testing_support::FreshDbPath;
using testing_support::MakeCell;
using testing_support::QueryCount;
using testing_support::QueryValue;
using testing_support::RecordedRunResult;

// Claims and finishes runs until killed.
[[noreturn]] void WriteForever(const std::string& path, const nlohmann::json& result) {
  try {
    ResultsDb db(path, ResultsDb::Mode::kReadWrite);
    const int64_t experiment = db.EnsureExperiment("killed", "k.toml", "[experiment]");
    for (int i = 0;; ++i) {
      const int64_t run = db.ClaimRun(experiment, MakeCell("c" + std::to_string(i), i), getpid());
      db.FinishRun(run, RunStatus::kOk, "", &result);
    }
  } catch (const std::exception&) {
    _exit(1);
  }
}

// Waits (up to 30 s) until the writer has finished its first run.
bool WaitForFirstRun(const std::string& path) {
  for (int attempt = 0; attempt < 3000; ++attempt) {
    try {
      ResultsDb db(path, ResultsDb::Mode::kReadOnly);
      if (QueryCount(db, "SELECT count(*) FROM runs WHERE status = 'ok'") > 0) return true;
    } catch (const ResultsError&) {
      // not created yet
    }
    usleep(10000);
  }
  return false;
}

TEST(KilledWriterTest, SigkillNeverLeavesHalfARun) {
  const nlohmann::json result = RecordedRunResult();
  const int64_t steps = static_cast<int64_t>(result["steps"].size());
  const int64_t timeline = static_cast<int64_t>(result["timeline"].size());
  for (int delay_ms : {0, 30, 70, 110}) {
    const std::string path = FreshDbPath();
    const pid_t writer = fork();
    ASSERT_GE(writer, 0);
    if (writer == 0) WriteForever(path, result);  // the child uses SQLite only
    EXPECT_TRUE(WaitForFirstRun(path));
    usleep(delay_ms * 1000);
    ASSERT_EQ(kill(writer, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(writer, &status, 0), writer);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: " << status;

    ResultsDb db(path, ResultsDb::Mode::kReadOnly);
    EXPECT_EQ(QueryValue(db, "PRAGMA integrity_check"), "ok");
    const int64_t finished = QueryCount(db, "SELECT count(*) FROM runs WHERE status = 'ok'");
    EXPECT_LE(QueryCount(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM run_metrics"), finished);
    EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM step_metrics"), finished * steps);
    EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM memory_timeline"), finished * timeline);
    EXPECT_EQ(QueryCount(db,
                         "SELECT count(*) FROM runs r WHERE status = 'running' AND EXISTS "
                         "(SELECT 1 FROM step_metrics s WHERE s.run_id = r.id)"),
              0);
  }
}

}  // namespace
}  // namespace memsweep::results
