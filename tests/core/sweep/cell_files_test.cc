// The files a sweep keeps for each cell (<db dir>/<db stem>/<experiment>/cell<i>-<hash>.json and
// .txt): one folder per database, and always the cell's latest run with the status the database
// records — a cell that fails never leaves an older run's `ok` summary beside its `failed` row.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "core/sweep/sweep_runner.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

// A namespace of its own: unity builds put this file beside sweep_test.cc's helpers.
namespace memsweep::sweep::cell_files_test {
namespace {

namespace fs = std::filesystem;
using testing_support::Outcome;
using testing_support::RunMemsweep;
using testing_support::SourcePath;

fs::path Scratch(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("memsweep_cell_files_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A tiny experiment whose sharding slot is the chaos fixture: `actions` are its cells' faults.
fs::path WriteExperiment(const fs::path& dir, const std::string& name, const std::string& actions) {
  const fs::path file = dir / (name + ".toml");
  std::ofstream(file) << "[experiment]\nname = \"" << name << "\"\nsteps = 2\nwarmup_steps = 1\n"
                      << "[data]\npath = \"" << SourcePath("experiments/data/devils-dictionary.jsonl")
                      << "\"\n[device]\nthreads = 1\n"
                      << "[plugins]\npaths = [\"" << MEMSWEEP_FIXTURE_DIR << "/chaos\"]\n"
                      << "[strategies.batching]\nseq_len = 32\nmicro_batch_size = 2\n"
                      << "[strategies.sharding]\nplugin = \"fixture-chaos\"\n"
                      << "[matrix]\n\"strategies.sharding.action\" = [" << actions << "]\n";
  return file;
}

std::string CellHash(const fs::path& db_path, int index) {
  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  const auto rows = db.Query("SELECT cell_hash FROM run_summary WHERE cell_index = " +
                             std::to_string(index));
  return rows.rows.empty() || !rows.rows[0][0] ? "" : *rows.rows[0][0];
}

TEST(CellFilesTest, EachDatabaseHasItsOwnFolder) {
  EXPECT_EQ(CellFilesDirectory("results/memsweep.db", "quickstart"),
            fs::path("results/memsweep/quickstart"));
  EXPECT_EQ(CellFilesDirectory("/tmp/q.db", "two slots"), fs::path("/tmp/q/two_slots"));
  EXPECT_NE(CellFilesDirectory("/tmp/a.db", "x"), CellFilesDirectory("/tmp/b.db", "x"));
}

// An earlier run's `ok` files of a cell (left by another database of the folder in the old
// layout, or by the same database before `--rerun`) do not survive the cell failing: its summary
// says failed, with the error the database records, and no result JSON is left beside it.
TEST(CellFilesTest, AFailedCellReplacesAnOlderOkSummary) {
  const fs::path dir = Scratch("stale");
  const fs::path file = WriteExperiment(dir, "stale", "\"abort\", \"segfault_in_destructor\"");
  const fs::path db = dir / "r.db";
  const std::string run = "run " + file.string() + " --db " + db.string() + " --no-estimate";
  Outcome out = RunMemsweep(run);
  ASSERT_EQ(out.exit_code, 3) << out.output;
  const fs::path keep = CellFilesDirectory(db.string(), "stale");
  const std::string stem0 = "cell0-" + CellHash(db, 0);
  const std::string stem1 = "cell1-" + CellHash(db, 1);

  // Older `ok` files of both cells, as an earlier run kept them.
  for (const std::string& stem : {stem0, stem1}) {
    std::ofstream(keep / (stem + ".txt")) << "memsweep run 'stale': ok\n\n  model  tiny\n";
    std::ofstream(keep / (stem + ".json")) << "{\"status\": \"ok\"}\n";
  }
  out = RunMemsweep(run + " --rerun failed");
  ASSERT_EQ(out.exit_code, 3) << out.output;

  // Cell 0 crashed before writing a result: a summary of its status and error, no JSON.
  const std::string crashed = ReadFile(keep / (stem0 + ".txt"));
  EXPECT_EQ(crashed.rfind("memsweep run 'stale', cell 0 (", 0), 0u) << crashed;
  EXPECT_NE(crashed.find("): failed\n  worker crashed: signal 6"), std::string::npos) << crashed;
  EXPECT_NE(crashed.find("The worker left no result"), std::string::npos) << crashed;
  EXPECT_FALSE(fs::exists(keep / (stem0 + ".json")));

  // Cell 1 wrote its result (status ok), then crashed while shutting down: recorded failed, and
  // its summary says so above the worker's own table.
  const std::string shut_down = ReadFile(keep / (stem1 + ".txt"));
  EXPECT_NE(shut_down.find("): failed\n  worker crashed: signal 11"), std::string::npos)
      << shut_down;
  EXPECT_NE(shut_down.find("after it wrote its result (status ok)"), std::string::npos)
      << shut_down;
  EXPECT_NE(shut_down.find("The worker's own summary, from before that verdict:\n\n"
                           "memsweep run 'stale': ok\n"),
            std::string::npos)
      << shut_down;
  const std::string json = ReadFile(keep / (stem1 + ".json"));
  EXPECT_NE(json.find("\"steps\""), std::string::npos) << "the run's own result: " << json;
  fs::remove_all(dir);
}

// Two databases in one folder running the same experiment keep their cell files apart.
TEST(CellFilesTest, TwoDatabasesInOneFolderDoNotShareCellFiles) {
  const fs::path dir = Scratch("two_dbs");
  const fs::path ok = WriteExperiment(dir, "shared", "\"none\"");
  Outcome out = RunMemsweep("run " + ok.string() + " --db " + (dir / "a.db").string() +
                            " --no-estimate");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("per-cell results and summaries: " + (dir / "a" / "shared").string()),
            std::string::npos)
      << out.output;
  const std::string stem = "cell0-" + CellHash(dir / "a.db", 0);
  EXPECT_NE(ReadFile(dir / "a" / "shared" / (stem + ".txt")).find("memsweep run 'shared': ok\n"),
            std::string::npos);
  // The same experiment in another database: its files go to b/, a/'s stay.
  out = RunMemsweep("run " + ok.string() + " --db " + (dir / "b.db").string() + " --no-estimate");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_TRUE(fs::exists(dir / "b" / "shared" / (stem + ".json")));
  EXPECT_TRUE(fs::exists(dir / "a" / "shared" / (stem + ".json")));
  EXPECT_FALSE(fs::exists(dir / "shared"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memsweep::sweep::cell_files_test
