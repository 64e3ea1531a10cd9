// No shell is ever involved in starting memsweep's workers (they get an argv, core/process/):
// paths with spaces, quotes and a newline work end to end — the experiment file, its data, the
// results database, the report and the snapshot. The test itself starts memsweep with an argv
// too, so no shell of its own quotes anything.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/results/results_db.h"
#include "support/results_db_fixtures.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::QueryCount;

struct ArgvOutcome {
  int exit_code = -1;
  std::string output;
};

// memsweep with exactly these arguments: fork and execv, stdout and stderr captured.
ArgvOutcome RunMemsweepArgv(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    std::vector<char*> argv;
    std::string binary = MEMSWEEP_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (std::string& arg : copy) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  ArgvOutcome result;
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) result.output.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(OddPathsTest, SpacesQuotesAndANewlineInEveryPathWorkEndToEnd) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("memsweep odd 'single' \"double\" $HOME `x`\nline " +
                        std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  fs::copy_file(memsweep::testing_support::SourcePath("experiments/quickstart.toml"),
                dir / "the 'quick' \"start\".toml");
  fs::copy_file(memsweep::testing_support::SourcePath("experiments/data/devils-dictionary.jsonl"),
                dir / "data" / "devils-dictionary.jsonl");
  const fs::path db = dir / "results db" / "r 'x'.db";

  ArgvOutcome run = RunMemsweepArgv({"run", (dir / "the 'quick' \"start\".toml").string(), "--db", db.string(),
                        "--set", "experiment.steps=2"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("4 cells: 3 ok, 1 oom, 0 failed"), std::string::npos) << run.output;
  {
    memsweep::results::ResultsDb results(db.string(), memsweep::results::ResultsDb::Mode::kReadOnly);
    EXPECT_EQ(QueryCount(results, "SELECT count(*) FROM runs WHERE status = 'ok'"), 3);
    EXPECT_EQ(QueryCount(results, "SELECT count(*) FROM memory_snapshots"), 4);
  }

  const fs::path page = dir / "a \"report\".html";
  ArgvOutcome report = RunMemsweepArgv({"report", "--db", db.string(), "-o", page.string()});
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_GT(fs::file_size(page), 10000u);

  const fs::path pickle = dir / "snap 'shot'.pickle";
  ArgvOutcome snapshot = RunMemsweepArgv({"snapshot", "1", "--db", db.string(), "-o", pickle.string()});
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.output;
  EXPECT_GT(fs::file_size(pickle), 1000u);
  fs::remove_all(dir);
}

}  // namespace
