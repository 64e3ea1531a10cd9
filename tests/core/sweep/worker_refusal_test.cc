// A plugin whose constructor throws only in the worker (the counting fixture with
// refuse_elsewhere: it passes the plan's validation, then refuses every other process): the
// cell fails, the sweep goes on, and what the user reads — the log line, the summary below the
// table, the database's error — is the plugin's whole message at the experiment file's line
// that set the value, never the runner's temporary cell file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace memsweep::sweep {
namespace {

namespace fs = std::filesystem;
using testing_support::FreshTempDir;
using testing_support::Outcome;
using testing_support::RunMemsweep;
using testing_support::SourcePath;

TEST(WorkerRefusalTest, AConstructorThatThrowsOnlyInTheWorkerIsReportedAtTheUsersLine) {
  const fs::path dir = FreshTempDir("worker_refusal");
  const fs::path file = dir / "refused.toml";
  const std::string matrix_line = "\"strategies.callbacks.0.refuse_elsewhere\" = [true]\n";
  const std::string text =
      "[experiment]\nname = \"refused\"\nsteps = 2\nwarmup_steps = 1\n[model]\n"
      "preset = \"tiny\"\n[data]\npath = \"" +
      SourcePath("experiments/data/devils-dictionary.jsonl") +
      "\"\n[device]\nthreads = 1\n[plugins]\npaths = [\"" + MEMSWEEP_FIXTURE_DIR +
      "/counting\"]\n[strategies.batching]\nseq_len = 32\nmicro_batch_size = 2\n"
      "[[strategies.callbacks]]\nplugin = \"fixture-counting\"\nfile = \"" +
      (dir / "count.txt").string() + "\"\n[matrix]\n" + matrix_line +
      "\"strategies.batching.micro_batch_size\" = [1, 2]\n";
  std::ofstream(file) << text;
  size_t line = 1;
  for (size_t i = 0; i < text.find(matrix_line); ++i) line += text[i] == '\n' ? 1 : 0;
  const std::string where = file.string() + ":" + std::to_string(line) + ":" +
                            std::to_string(matrix_line.find("true") + 1) + ": ";
  const std::string message =
      where + "[[strategies.callbacks]] plugin 'fixture-counting' (callbacks) could not be "
              "created: refuse_elsewhere = true and this process (";
  const std::string ending = "): the fixture refuses to be constructed anywhere but at plan time";

  const fs::path db_path = dir / "r.db";
  // Forked workers (the default), then new processes, then a --wide summary (nothing wrapped):
  // each cell fails, none takes the sweep.
  for (const std::string workers :
       {"", " --exec-workers --rerun failed", " --rerun failed --wide"}) {
    fs::remove(dir / "count.txt");  // this runner's validation is the first construction
    const Outcome out = RunMemsweep("run " + file.string() + " --db " + db_path.string() + workers);
    EXPECT_EQ(out.exit_code, 3) << out.output;
    EXPECT_NE(out.output.find("2 cells: 0 ok, 0 oom, 2 failed"), std::string::npos) << out.output;
    // The log's line for the cell: its whole first line, the plugin's message to its end.
    const size_t logged = out.output.find("] failed: " + message);
    ASSERT_NE(logged, std::string::npos) << out.output;
    EXPECT_EQ(out.output.substr(out.output.find('\n', logged) - ending.size(), ending.size()),
              ending)
        << out.output;
    // Under the table: the first line again, not cut at the error column's width.
    const std::string position = where.substr(0, where.size() - 1);  // wrapping may follow
    EXPECT_NE(out.output.find("cell 0: " + position), std::string::npos) << out.output;
    EXPECT_NE(out.output.find("cell 1: " + position), std::string::npos) << out.output;
    if (workers.find("--wide") != std::string::npos) {  // the whole first line on one line
      const size_t under = out.output.find("cell 1: " + message);
      ASSERT_NE(under, std::string::npos) << out.output;
      EXPECT_EQ(out.output.substr(out.output.find('\n', under) - ending.size(), ending.size()),
                ending)
          << out.output;
    }
    EXPECT_EQ(out.output.find(".memsweep-work"), std::string::npos)
        << "no temporary cell file is named\n" << out.output;
  }
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult rows =
      db.Query("SELECT error FROM runs WHERE status = 'failed' ORDER BY cell_index, id");
  ASSERT_EQ(rows.rows.size(), 2u);
  for (const auto& row : rows.rows) {
    const std::string error = row[0].value_or("");
    EXPECT_EQ(error.rfind(message, 0), 0u) << error;
    EXPECT_NE(error.find(ending + "\n(worker exit code 2"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace memsweep::sweep
