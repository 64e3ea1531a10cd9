// Two processes write runs to one new database file at the same time: both finish, no row is
// lost, the file is intact.
#include <gtest/gtest.h>
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

constexpr int kWriters = 2;
constexpr int kRunsPerWriter = 50;

// What each writer process does; returns its exit code.
int WriteRuns(const std::string& path, int writer, const nlohmann::json& result) {
  try {
    ResultsDb db(path, ResultsDb::Mode::kReadWrite);
    const int64_t experiment = db.EnsureExperiment("concurrent", "c.toml", "[experiment]");
    for (int i = 0; i < kRunsPerWriter; ++i) {
      const int64_t cell_index = writer * kRunsPerWriter + i;
      const int64_t run = db.ClaimRun(
          experiment, MakeCell("w" + std::to_string(writer) + "-" + std::to_string(i), cell_index),
          getpid());
      db.FinishRun(run, RunStatus::kOk, "", &result);
      usleep(2000);  // the next cell's run, during which a sweep holds no lock
    }
    return 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "writer %d: %s\n", writer, e.what());
    return 1;
  }
}

TEST(ConcurrentWritersTest, TwoProcessesWritingOneNewFileLoseNothing) {
  const std::string path = FreshDbPath();  // does not exist yet: both processes create it
  const nlohmann::json result = RecordedRunResult();
  int start_gate[2];  // the writers start together once both exist
  ASSERT_EQ(pipe(start_gate), 0);
  std::vector<pid_t> writers;
  for (int writer = 0; writer < kWriters; ++writer) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the child uses SQLite only, then leaves without running anything else
      char go = 0;
      close(start_gate[1]);
      if (read(start_gate[0], &go, 1) != 1) _exit(3);
      _exit(WriteRuns(path, writer, result));
    }
    writers.push_back(pid);
  }
  close(start_gate[0]);
  const char go[kWriters] = {};
  ASSERT_EQ(write(start_gate[1], go, kWriters), kWriters);
  close(start_gate[1]);
  for (pid_t pid : writers) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  }

  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(QueryValue(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM experiments"), 1);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM runs WHERE status = 'ok'"),
            kWriters * kRunsPerWriter);
  EXPECT_EQ(QueryCount(db, "SELECT count(DISTINCT worker_pid) FROM runs"), kWriters);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM run_metrics"), kWriters * kRunsPerWriter);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM step_metrics"),
            kWriters * kRunsPerWriter * static_cast<int64_t>(result["steps"].size()));
  // The writers really overlapped: each wrote runs while the other was still writing.
  EXPECT_LT(QueryCount(db, "SELECT min(id) FROM runs WHERE cell_hash LIKE 'w1-%'"),
            QueryCount(db, "SELECT max(id) FROM runs WHERE cell_hash LIKE 'w0-%'"));
  EXPECT_LT(QueryCount(db, "SELECT min(id) FROM runs WHERE cell_hash LIKE 'w0-%'"),
            QueryCount(db, "SELECT max(id) FROM runs WHERE cell_hash LIKE 'w1-%'"));
}

}  // namespace
}  // namespace memsweep::results
