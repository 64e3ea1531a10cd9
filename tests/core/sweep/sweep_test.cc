// The sweep runner as users meet it: the memsweep binary running experiment files whose cells
// crash, hit the budget or hang; killed with SIGKILL and resumed; two sweeps sharing a database.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/results/results_db.h"
#include "core/sweep/cell_process.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

extern char** environ;

namespace memsweep::sweep {
namespace {

namespace fs = std::filesystem;
using testing_support::SourcePath;

fs::path Scratch(const std::string& name) {
  // Per process: two test runs on one machine must not share (and delete) each other's files.
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("memsweep_sweep_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A tiny, quick experiment; `extra` is appended (matrix, strategies ...).
fs::path WriteExperiment(const fs::path& dir, const std::string& name, const std::string& extra) {
  const fs::path file = dir / (name + ".toml");
  std::ofstream(file) << "[experiment]\nname = \"" << name << "\"\nsteps = 3\nwarmup_steps = 1\n"
                      << "[data]\npath = \"" << SourcePath("experiments/data/devils-dictionary.jsonl")
                      << "\"\n[device]\nthreads = 1\n"
                      << "[plugins]\npaths = [\"" << MEMSWEEP_FIXTURE_DIR << "/chaos\", \""
                      << MEMSWEEP_FIXTURE_DIR << "/chaos-callback\"]\n"
                      << "[strategies.batching]\nseq_len = 32\nmicro_batch_size = 2\n"
                      << extra;
  return file;
}

pid_t Spawn(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(MEMSWEEP_BINARY));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  posix_spawn(&pid, MEMSWEEP_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

int ExitCodeOf(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string Scalar(results::ResultsDb& db, const std::string& sql) {
  const results::QueryResult r = db.Query(sql);
  return r.rows.empty() || !r.rows[0][0] ? "" : *r.rows[0][0];
}

const char* kChaosMatrix =
    "[strategies.sharding]\nplugin = \"fixture-chaos\"\n"
    "[matrix]\n\"strategies.sharding.action\" = [\"none\", \"abort\", \"hang\"]\n"
    "\"device.memory_budget\" = [\"64MiB\"]\n"
    "[[matrix.include]]\n\"strategies.sharding.action\" = \"none\"\n"
    "\"device.memory_budget\" = \"2MiB\"\n";

TEST(SweepTest, CrashOomAndTimeoutAreRecordedAndTheSweepGoesOn) {
  const fs::path dir = Scratch("chaos");
  const fs::path file = WriteExperiment(dir, "chaos", kChaosMatrix);
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  const int code = ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string(),
                                     "--cell-timeout", "15"}, log));
  EXPECT_EQ(code, 3) << ReadFile(log);
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult rows = db.Query(
      "SELECT json_extract(params, '$.\"strategies.sharding.action\"'), "
      "json_extract(params, '$.\"device.memory_budget\"'), status, error FROM run_summary "
      "ORDER BY cell_index");
  ASSERT_EQ(rows.rows.size(), 4u) << ReadFile(log);
  EXPECT_EQ(rows.rows[0][2].value_or(""), "ok");
  EXPECT_EQ(rows.rows[1][2].value_or(""), "failed");
  EXPECT_NE(rows.rows[1][3].value_or("").find("crashed: signal 6"), std::string::npos)
      << rows.rows[1][3].value_or("");
  EXPECT_EQ(rows.rows[2][2].value_or(""), "timeout");
  EXPECT_EQ(rows.rows[3][2].value_or(""), "oom");
  EXPECT_NE(rows.rows[3][3].value_or("").find("Tried to allocate"), std::string::npos)
      << rows.rows[3][3].value_or("");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM step_metrics s JOIN runs r ON r.id = s.run_id "
                       "WHERE r.status = 'ok'"), "3");

  // Resume: nothing runs again, nothing is duplicated.
  EXPECT_EQ(ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string()}, log)), 0)
      << ReadFile(log);
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM runs"), "4");
  EXPECT_NE(ReadFile(log).find("4 already done"), std::string::npos);

  // --rerun failed runs the crashed and the timed-out cell again, in their own rows.
  const std::string ids_before = Scalar(db, "SELECT group_concat(id) FROM runs ORDER BY id");
  EXPECT_EQ(ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string(), "--rerun", "failed",
                              "--cell-timeout", "15"}, log)), 3);
  EXPECT_NE(ReadFile(log).find("4 cells: 0 ok, 0 oom, 1 failed, 1 timed out, 2 already done"),
            std::string::npos) << ReadFile(log);
  EXPECT_EQ(Scalar(db, "SELECT group_concat(id) FROM runs ORDER BY id"), ids_before);
}

// Twenty cells, each with a fault drawn at random (seeded; the seed is printed, and
// MEMSWEEP_FAULT_SEED replays one): each ends with the status and reason of its own fault, the
// sweep goes on, and no row is lost or duplicated.
TEST(SweepTest, RandomFaultsEndOnlyTheirOwnCells) {
  const char* replay = std::getenv("MEMSWEEP_FAULT_SEED");
  const uint64_t seed = replay != nullptr ? std::stoull(replay)
                                          : static_cast<uint64_t>(::time(nullptr));
  std::mt19937_64 random(seed);
  const std::vector<std::string> actions = {"none", "abort", "segfault", "throw", "sigkill",
                                            "segfault_in_destructor"};
  std::string matrix = "[strategies.sharding]\nplugin = \"fixture-chaos\"\n[matrix]\n"
                       "\"experiment.seed\" = [0]\n";
  std::vector<std::pair<std::string, int>> faults;
  for (int cell = 0; cell < 20; ++cell) {
    faults.emplace_back(actions[random() % actions.size()], static_cast<int>(random() % 3));
    matrix += "[[matrix.include]]\n\"experiment.seed\" = " + std::to_string(cell + 1) +
              "\n\"strategies.sharding.action\" = \"" + faults.back().first +
              "\"\n\"strategies.sharding.at_step\" = " + std::to_string(faults.back().second) +
              "\n";
  }
  SCOPED_TRACE("MEMSWEEP_FAULT_SEED=" + std::to_string(seed));
  const fs::path dir = Scratch("random-faults");
  const fs::path file = WriteExperiment(dir, "faults", matrix);
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  const int code = ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string()}, log));
  const bool any_fault = std::any_of(faults.begin(), faults.end(),
                                     [](const auto& f) { return f.first != "none"; });
  EXPECT_EQ(code, any_fault ? 3 : 0) << ReadFile(log);
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult rows = db.Query(
      "SELECT json_extract(params, '$.\"experiment.seed\"'), status, error, steps_completed "
      "FROM run_summary ORDER BY cell_index");
  ASSERT_EQ(rows.rows.size(), 21u) << ReadFile(log);  // seed 0 (no fault) and the twenty
  EXPECT_EQ(Scalar(db, "SELECT count(DISTINCT cell_hash) FROM runs"), "21");
  for (size_t i = 1; i < rows.rows.size(); ++i) {
    const auto& [action, at_step] = faults[std::stoi(rows.rows[i][0].value_or("0")) - 1];
    const std::string status = rows.rows[i][1].value_or("");
    const std::string error = rows.rows[i][2].value_or("");
    SCOPED_TRACE("cell " + std::to_string(i) + ": " + action + " at step " +
                 std::to_string(at_step) + ": " + status + " " + error);
    if (action == "none") {
      EXPECT_EQ(status, "ok");
      EXPECT_EQ(rows.rows[i][3].value_or(""), "3");
    } else {
      EXPECT_EQ(status, "failed");
    }
    if (action == "abort") EXPECT_NE(error.find("crashed: signal 6"), std::string::npos);
    if (action == "segfault") EXPECT_NE(error.find("crashed: signal 11"), std::string::npos);
    if (action == "throw") {
      EXPECT_NE(error.find("chaos fixture threw at step " + std::to_string(at_step)),
                std::string::npos);
    }
    if (action == "sigkill") EXPECT_NE(error.find("SIGKILL"), std::string::npos);
    // The strategy is destroyed after the worker wrote its result: the crash fails the cell,
    // whose figures are kept.
    if (action == "segfault_in_destructor") {
      EXPECT_NE(error.find("crashed: signal 11"), std::string::npos);
      EXPECT_NE(error.find("after it wrote its result (status ok)"), std::string::npos);
      EXPECT_EQ(rows.rows[i][3].value_or(""), "3");
    }
    if (action == "none") EXPECT_EQ(error, "");
  }
  std::cout << "[ fault trials ] seed " << seed << ": 20 cells, each fault ended its own cell\n";
}

// A rank that hangs while the other waits for it in a collective: [device] collective_timeout
// ends the waiting rank, the launcher ends the hung one, the cell ends failed saying so, and the
// next cell runs.
TEST(SweepTest, ARankHangingInACollectiveEndsOnlyItsCell) {
  const fs::path dir = Scratch("collective-hang");
  const fs::path file = WriteExperiment(
      dir, "hang",
      "[strategies.sharding]\nplugin = \"ddp\"\n"
      "[matrix]\n\"strategies.callbacks\" = [[{ plugin = \"fixture-chaos-callback\", "
      "action = \"hang\", only_rank = 1, at_step = 0 }], [{ plugin = "
      "\"fixture-chaos-callback\", action = \"none\" }]]\n"
      "\"device.world_size\" = [2]\n\"device.collective_timeout\" = [5.0]\n");
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  const auto started = std::chrono::steady_clock::now();
  const int code = ExitCodeOf(
      Spawn({"run", file.string(), "--db", db_path.string(), "--cell-timeout", "120"}, log));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(code, 3) << ReadFile(log);
  EXPECT_LT(seconds, 100.0) << "the collective timeout did not end the cell";
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult rows =
      db.Query("SELECT status, error FROM run_summary ORDER BY cell_index");
  ASSERT_EQ(rows.rows.size(), 2u) << ReadFile(log);
  EXPECT_EQ(rows.rows[0][0].value_or(""), "failed") << rows.rows[0][1].value_or("");
  std::cout << "[ collective hang ] " << rows.rows[0][1].value_or("") << "\n";
  EXPECT_EQ(rows.rows[1][0].value_or(""), "ok") << rows.rows[1][1].value_or("");
}

TEST(SweepTest, CtrlCStopsCleanlyAndTheCellRunsOnResume) {
  const fs::path dir = Scratch("interrupt");
  const fs::path file = WriteExperiment(
      dir, "interrupted", "[strategies.sharding]\nplugin = \"fixture-chaos\"\naction = \"hang\"\n");
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  const pid_t pid = Spawn({"run", file.string(), "--db", db_path.string()}, log);
  // Wait until the cell is running, then interrupt.
  for (int i = 0; i < 100 && ReadFile(log).find("[1/1] cell 0") == std::string::npos; ++i) {
    usleep(100 * 1000);
  }
  usleep(500 * 1000);
  kill(pid, SIGINT);
  EXPECT_EQ(ExitCodeOf(pid), 130) << ReadFile(log);
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(Scalar(db, "SELECT status FROM runs"), "pending");
  EXPECT_NE(ReadFile(log).find("(interrupted)"), std::string::npos) << ReadFile(log);
}

TEST(SweepTest, InvalidExperimentWritesNoDatabase) {
  const fs::path dir = Scratch("invalid");
  const fs::path file = WriteExperiment(dir, "bad", "[matrix]\n\"model.hidden_size\" = [64, 66]\n");
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  EXPECT_EQ(ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string()}, log)), 2);
  EXPECT_FALSE(fs::exists(db_path)) << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("not divisible by num_attention_heads"), std::string::npos)
      << ReadFile(log);
}

TEST(SweepTest, SigkillAtRandomMomentsThenResumeLosesAndDuplicatesNothing) {
  const fs::path dir = Scratch("sigkill");
  const fs::path file = WriteExperiment(
      dir, "killed", "[matrix]\n\"strategies.batching.micro_batch_size\" = [1, 2, 3]\n"
                     "\"experiment.seed\" = [1, 2]\n");
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  std::mt19937 rng(20261122);
  std::uniform_int_distribution<int> delay_ms(200, 2500);
  for (int i = 0; i < 10; ++i) {
    const pid_t pid = Spawn({"run", file.string(), "--db", db_path.string()}, log);
    usleep(delay_ms(rng) * 1000);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  ASSERT_EQ(ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string()}, log)), 0)
      << ReadFile(log);
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(Scalar(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM runs"), "6");
  EXPECT_EQ(Scalar(db, "SELECT count(DISTINCT cell_hash) FROM runs"), "6");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM runs WHERE status = 'ok'"), "6");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM step_metrics"), "18");  // 6 cells x 3 steps
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM run_metrics"), "6");
}

// Three cells; the second breaks the database with the chaos fixture's `action` while it runs;
// the third would abort if it ran.
std::string DatabaseBreakingMatrix(const std::string& action, const fs::path& db_path) {
  return "[strategies.sharding]\nplugin = \"fixture-chaos\"\nfile = \"" + db_path.string() +
         "\"\n[matrix]\n\"strategies.sharding.action\" = [\"none\", \"" + action +
         "\", \"abort\"]\n";
}

// The database turns corrupt while cell 1 runs (another program overwrote it): the sweep stops
// with exit code 2 and a message that says what happened, what was kept and what to do; cell 2
// does not run; nothing aborts.
TEST(SweepTest, ADatabaseCorruptedMidSweepStopsTheSweepWithExitTwo) {
  const fs::path dir = Scratch("corrupted");
  const fs::path db_path = dir / "r.db";
  const fs::path file =
      WriteExperiment(dir, "corrupted", DatabaseBreakingMatrix("corrupt_database", db_path));
  const testing_support::Outcome out =
      testing_support::RunMemsweep("run " + file.string() + " --db " + db_path.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_EQ(out.output.find("terminate called"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("error: " + db_path.string() + ": file is not a database"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("the sweep stopped: cell 1 ran (status ok) but its outcome could not "
                            "be recorded (its result is kept as " +
                            (dir / "r" / "corrupted" / "cell1-").string()),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("1 of the 3 cells are recorded; cell 2 did not run.\nTo go on, make "
                            "the database writable again"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("if it is damaged, pass another --db"), std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("[3/3]"), std::string::npos) << out.output;
  int kept = 0;
  for (const auto& entry : fs::directory_iterator(dir / "r" / "corrupted")) {
    kept += entry.path().filename().string().rfind("cell1-", 0) == 0;
  }
  EXPECT_EQ(kept, 2);  // cell 1's result and summary
  if (fs::exists(dir / ".memsweep-work")) {
    EXPECT_TRUE(fs::is_empty(dir / ".memsweep-work")) << "the sweep's work folder is removed";
  }

  // The next run refuses the damaged file before anything runs, leaving it as it is.
  const testing_support::Outcome again =
      testing_support::RunMemsweep("run " + file.string() + " --db " + db_path.string());
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find(db_path.string() + ": not a results database"), std::string::npos)
      << again.output;
}

// The database stops taking writes while cell 1 runs (the runner's file-size limit drops to 1
// byte, as a full disk would refuse them): the sweep stops with exit code 2; cell 0 stays
// recorded whole, cell 1 has no figures (its transaction rolled back) and runs again next time,
// as does cell 2, which did not run.
TEST(SweepTest, ADatabaseThatStopsTakingWritesMidSweepKeepsWhatWasRecorded) {
  const fs::path dir = Scratch("unwritable");
  const fs::path db_path = dir / "r.db";
  const fs::path file =
      WriteExperiment(dir, "unwritable", DatabaseBreakingMatrix("limit_runner_files", db_path));
  const testing_support::Outcome out =
      testing_support::RunMemsweep("run " + file.string() + " --db " + db_path.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: " + db_path.string() + ": "), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("the sweep stopped: cell 1 ran (status ok) but its outcome could not "
                            "be recorded"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("1 of the 3 cells are recorded; cell 2 did not run."),
            std::string::npos)
      << out.output;

  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(Scalar(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Scalar(db, "SELECT group_concat(status, ' ') FROM (SELECT status FROM runs "
                       "ORDER BY cell_index)"),
            "ok running pending");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM step_metrics s JOIN runs r ON r.id = s.run_id "
                       "WHERE r.cell_index = 0"),
            "3");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM step_metrics s JOIN runs r ON r.id = s.run_id "
                       "WHERE r.cell_index > 0"),
            "0");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM run_metrics m JOIN runs r ON r.id = m.run_id "
                       "WHERE r.cell_index > 0"),
            "0");
}

// CPU cells start as forks of the runner by default; --exec-workers starts each as a new
// memsweep process. Both give the same bytes and losses (the figures are deterministic).
TEST(SweepTest, ForkedAndExecutedWorkersRecordTheSameFigures) {
  const fs::path dir = Scratch("fork");
  const fs::path file = WriteExperiment(
      dir, "fork", "[matrix]\n\"strategies.batching.micro_batch_size\" = [1, 3]\n");
  const std::string figures =
      "SELECT group_concat(cell_index || ':' || peak_allocated_bytes || ':' || params_bytes || "
      "':' || printf('%.17g', final_loss), ' ') FROM (SELECT * FROM run_summary ORDER BY "
      "cell_index)";
  std::string by_mode[2];
  for (int exec = 0; exec < 2; ++exec) {
    const fs::path db_path = dir / (exec ? "exec.db" : "fork.db");
    const fs::path log = dir / (exec ? "exec.txt" : "fork.txt");
    std::vector<std::string> args = {"run", file.string(), "--db", db_path.string()};
    if (exec) args.push_back("--exec-workers");
    EXPECT_EQ(ExitCodeOf(Spawn(args, log)), 0) << ReadFile(log);
    EXPECT_EQ(ReadFile(log).find("start as forks of this runner") != std::string::npos, !exec)
        << ReadFile(log);
    EXPECT_EQ(ReadFile(log).find("starts as a new process"), std::string::npos) << ReadFile(log);
    results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
    EXPECT_EQ(Scalar(db, "SELECT count(*) FROM run_summary WHERE status = 'ok'"), "2");
    by_mode[exec] = Scalar(db, figures);
  }
  EXPECT_FALSE(by_mode[0].empty());
  EXPECT_EQ(by_mode[0], by_mode[1]);
}

// A forked worker: its stdout lines reach the runner, its return value is the exit code, and
// an exception ends it with code 1 and the message in its stderr.
TEST(CellProcessTest, AForkedBodyReportsItsLinesAndExitCode) {
  const fs::path dir = Scratch("forked_body");
  std::vector<std::string> lines;
  CellProcess ok([] {
    std::printf("progress 1 2\n");
    return 0;
  }, (dir / "ok.stderr").string());
  const CellExit ok_exit =
      ok.Wait(10, [&lines](const std::string& line) { lines.push_back(line); }, nullptr);
  EXPECT_EQ(ok_exit.kind, CellExitKind::kExited);
  EXPECT_EQ(ok_exit.code, 0);
  EXPECT_EQ(lines, std::vector<std::string>{"progress 1 2"});

  CellProcess throws([]() -> int { throw std::runtime_error("the cell broke"); },
                     (dir / "throws.stderr").string());
  const CellExit thrown = throws.Wait(10, nullptr, nullptr);
  EXPECT_EQ(thrown.code, 1);
  EXPECT_EQ(thrown.stderr_tail, "the cell broke");
}

// A child ended by SIGKILL (the host's OOM killer's signal): its peak resident set is known all
// the same, from the kernel.
TEST(CellProcessTest, AKilledChildsPeakResidentSetIsKnown) {
  const fs::path dir = Scratch("killed_body");
  constexpr int64_t kTouched = 64 << 20;
  CellProcess killed([]() -> int {
    std::vector<char> block(64 << 20, 1);  // written: resident
    std::printf("touched %d\n", static_cast<int>(block.back()));
    std::fflush(stdout);
    raise(SIGKILL);
    return 0;
  }, (dir / "killed.stderr").string());
  const CellExit exit = killed.Wait(30, nullptr, nullptr);
  EXPECT_EQ(exit.kind, CellExitKind::kSignaled);
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_GE(exit.max_rss_bytes, kTouched);
}

// A worker killed by SIGKILL that the runner did not send: the error says the host most likely
// ran out of memory, and gives the worker's host figures as far as they are known.
TEST(SweepTest, AWorkerKilledBySigkillIsReportedAsTheHostRunningOutOfMemory) {
  const fs::path dir = Scratch("oom_killed");
  const fs::path file = WriteExperiment(
      dir, "oom_killed",
      "[strategies.sharding]\nplugin = \"fixture-chaos\"\naction = \"sigkill\"\nat_step = 1\n");
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  EXPECT_EQ(ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string()}, log)), 3)
      << ReadFile(log);
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(Scalar(db, "SELECT status FROM run_summary"), "failed");
  const std::string error = Scalar(db, "SELECT error FROM run_summary");
  for (const char* part :
       {"worker crashed: signal 9 (Killed): most likely the host ran out of memory and the "
        "kernel's OOM killer ended it",
        "; worker host memory: peak_rss_bytes ", " MiB, host_pool_peak_bytes 0 B at step 1/3"}) {
    EXPECT_NE(error.find(part), std::string::npos) << part << "\nmissing from: " << error;
  }
  // The log line of the cell says it too.
  EXPECT_NE(ReadFile(log).find("most likely the host ran out of memory"), std::string::npos)
      << ReadFile(log);
}

// MEMSWEEP_HOST_MEMORY stands for a machine with that much host memory available: at 1 MiB even
// the estimate's floor (a worker's own process) is more, so the cell is not started, its
// estimate says why, and the sweep ends as for a failed cell. The same cell runs where the
// memory is there. A value that is no size is refused before anything runs.
TEST(SweepTest, ACellNeedingMoreHostMemoryThanThereIsIsNotStarted) {
  const fs::path dir = Scratch("host_short");
  const fs::path file = WriteExperiment(dir, "host_short", "");
  const fs::path db_path = dir / "r.db";
  const fs::path log = dir / "log.txt";
  setenv("MEMSWEEP_HOST_MEMORY", "lots", 1);
  EXPECT_EQ(ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string()}, log)), 2);
  EXPECT_NE(ReadFile(log).find("MEMSWEEP_HOST_MEMORY=lots: write the host memory"),
            std::string::npos)
      << ReadFile(log);
  EXPECT_FALSE(fs::exists(db_path));
  setenv("MEMSWEEP_HOST_MEMORY", "1MiB", 1);
  const int short_exit = ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string()}, log));
  unsetenv("MEMSWEEP_HOST_MEMORY");
  EXPECT_EQ(short_exit, 3) << ReadFile(log);
  {
    results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
    EXPECT_EQ(Scalar(db, "SELECT status FROM run_summary"), "failed");
    const std::string error = Scalar(db, "SELECT error FROM run_summary");
    EXPECT_EQ(error.rfind("not started: its workers need at least ", 0), 0u) << error;
    EXPECT_NE(error.find(" of host memory (the estimate's floor"), std::string::npos) << error;
    EXPECT_NE(error.find("and 1.00 MiB is available"), std::string::npos) << error;
    EXPECT_NE(error.find("memsweep run --no-estimate"), std::string::npos) << error;
    // No worker ran: no figures; the estimate that refused it is kept.
    EXPECT_EQ(Scalar(db, "SELECT peak_allocated_bytes FROM run_summary"), "");
    EXPECT_EQ(Scalar(db, "SELECT estimate_status FROM run_summary"), "estimated");
  }
  EXPECT_NE(ReadFile(log).find("not started: its workers need at least"), std::string::npos);
  // On this machine (enough memory for a tiny cell) it runs.
  EXPECT_EQ(ExitCodeOf(Spawn({"run", file.string(), "--db", db_path.string(), "--rerun", "failed"},
                             log)),
            0)
      << ReadFile(log);
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(Scalar(db, "SELECT status FROM run_summary"), "ok");
}

TEST(CellProcessTest, ForkIsUnsafeWhileAnotherThreadRuns) {
  std::atomic<bool> done{false};
  std::thread other([&done] {
    while (!done) usleep(1000);
  });
  EXPECT_FALSE(ForkIsSafe());
  done = true;
  other.join();
}

TEST(SweepTest, TwoConcurrentSweepsOnOneDatabaseBothComplete) {
  const fs::path dir = Scratch("concurrent");
  const std::string matrix = "[matrix]\n\"strategies.batching.micro_batch_size\" = [1, 2, 3]\n";
  const fs::path a = WriteExperiment(dir, "first", matrix);
  const fs::path b = WriteExperiment(dir, "second", matrix);
  const fs::path db_path = dir / "r.db";
  const pid_t pa = Spawn({"run", a.string(), "--db", db_path.string()}, dir / "a.txt");
  const pid_t pb = Spawn({"run", b.string(), "--db", db_path.string()}, dir / "b.txt");
  EXPECT_EQ(ExitCodeOf(pa), 0) << ReadFile(dir / "a.txt");
  EXPECT_EQ(ExitCodeOf(pb), 0) << ReadFile(dir / "b.txt");
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM run_summary WHERE status = 'ok'"), "6");
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM step_metrics"), "18");
  EXPECT_EQ(Scalar(db, "PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace memsweep::sweep
