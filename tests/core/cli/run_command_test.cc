// Runs the memsweep binary as a user would and checks exit codes and files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "core/env/cuda_probe.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;
using memsweep::testing_support::SourcePath;

TEST(RunCommandTest, BadInputExitsTwoAndWritesNothing) {
  const fs::path dir = FreshTempDir("bad");
  const fs::path file = dir / "bad.toml";
  std::ofstream(file) << "[data]\npath = \"" << SourcePath("experiments/data/devils-dictionary.jsonl")
                      << "\"\n[model]\nhiden_size = 64\n";
  const fs::path db = dir / "r.db";
  const Outcome out = RunMemsweep("run " + file.string() + " --db " + db.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find(file.string() + ":4:1: unknown key 'hiden_size'"), std::string::npos)
      << out.output;
  EXPECT_FALSE(fs::exists(db));
}

// A data file is read once, before any cell runs or the database is created: a malformed line
// or a file without documents is exit 2 naming the file (and line), like a bad experiment file.
// (Every cell failed in its worker before: exit 3, with a database of failed cells.)
void ExpectDataRefusedBeforeAnyCell(const std::string& name, const std::string& data,
                                    const std::string& message) {
  const fs::path dir = FreshTempDir(name);
  std::ofstream(dir / "data.jsonl") << data;
  std::ofstream(dir / "e.toml") << "[experiment]\nname = \"" << name
                                << "\"\nsteps = 1\n[model]\npreset = \"tiny\"\n"
                                   "[data]\npath = \"data.jsonl\"\n[strategies.batching]\n"
                                   "seq_len = 32\n[matrix]\n"
                                   "\"strategies.batching.micro_batch_size\" = [1, 2]\n";
  const fs::path db = dir / "r.db";
  const Outcome out = RunMemsweep("run " + (dir / "e.toml").string() + " --db " + db.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: " + (dir / "data.jsonl").string() + message),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("cells, results in"), std::string::npos) << out.output;
  EXPECT_FALSE(fs::exists(db)) << out.output;
  EXPECT_FALSE(fs::exists(dir / name)) << "no cell files";
}

TEST(RunCommandTest, AMalformedDataLineExitsTwoBeforeAnyCellRuns) {
  ExpectDataRefusedBeforeAnyCell("data_malformed",
                                 "{\"text\": \"one\"}\n{\"text\": \"two\"}\n{\"text\": three}\n",
                                 ":3: invalid JSON (");
}

TEST(RunCommandTest, AnEmptyDataFileExitsTwoBeforeAnyCellRuns) {
  ExpectDataRefusedBeforeAnyCell("data_empty", "",
                                 ": no documents found: check [data] path and [data] format");
}

// A --db that is not a database (here: text) is refused before anything runs, with what to do,
// and the file is left as it was: no abort (it was `terminate called ...`, exit 134).
TEST(RunCommandTest, ADbThatIsNotADatabaseExitsTwoAndIsLeftAsItIs) {
  const fs::path dir = FreshTempDir("not_a_db");
  const fs::path db = dir / "notes.db";
  const std::string text = "these are my notes, not a database\n" + std::string(5000, 'x') + "\n";
  std::ofstream(db) << text;
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") +
                                  " --set experiment.steps=1 --db " + db.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: " + db.string() +
                            ": not a results database: file is not a database (SQLite); it was "
                            "left as it is. Pass --db a memsweep results database, or a path "
                            "where none exists yet to start a new one"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("terminate called"), std::string::npos) << out.output;
  std::ifstream in(db);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text);
  for (const fs::path& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry, db) << "nothing but the file itself";
  }
  // The commands that read a database say the same.
  for (const std::string& command : {"compare --db " + db.string(),
                                     "query --db " + db.string() + " \"SELECT 1\""}) {
    const Outcome read = RunMemsweep(command);
    EXPECT_EQ(read.exit_code, 2) << read.output;
    EXPECT_NE(read.output.find(db.string() + ": not a results database"), std::string::npos)
        << read.output;
  }
}

TEST(RunCommandTest, CudaWithoutAUsableGpuExitsTwoSayingWhatWasFound) {
  const memsweep::env::CudaProbe& cuda = memsweep::env::ProbeCuda();
  if (cuda.usable()) GTEST_SKIP() << "this machine has a usable CUDA device";
  const fs::path dir = FreshTempDir("cuda_refused");
  const fs::path db = dir / "r.db";
  const Outcome out =
      RunMemsweep("run " + SourcePath("experiments/gpu-quickstart.toml") + " --db " + db.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("type = \"cuda\": " + cuda.reason), std::string::npos) << out.output;
  EXPECT_FALSE(fs::exists(db));  // nothing ran, nothing was written
}

// The final table names each matrix key so that a reader knows which slot it is: a plugin key
// by its slot, a list entry's parameter by its own name where no other key shares it.
TEST(RunCommandTest, ParamsColumnNamesTheSlotOfEachPlugin) {
  const fs::path dir = FreshTempDir("slots");
  const fs::path file = dir / "slots.toml";
  std::ofstream(file) << "[experiment]\nname = \"slots\"\nsteps = 2\nwarmup_steps = 1\n"
                      << "[model]\npreset = \"tiny\"\n[data]\npath = \""
                      << SourcePath("experiments/data/devils-dictionary.jsonl") << "\"\n"
                      << "[device]\nthreads = 2\n"
                      << "[strategies.batching]\nseq_len = 32\nmicro_batch_size = 2\n"
                      << "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = 10\n"
                      << "[matrix]\n\"strategies.checkpointing.plugin\" = [\"none\", \"full\"]\n"
                      << "\"strategies.precision.plugin\" = [\"fp32\"]\n"
                      << "\"strategies.callbacks.empty_cache.every\" = [1]\n";
  const Outcome out = RunMemsweep("run " + file.string() + " --db " + (dir / "r.db").string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("  ok      every=1 checkpointing=none precision=fp32  "),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("  ok      every=1 checkpointing=full precision=fp32  "),
            std::string::npos)
      << out.output;
  // Again (both cells done): the summary with exactly the columns asked for.
  const Outcome again = RunMemsweep("run " + file.string() + " --db " + (dir / "r.db").string() +
                                    " --columns params,cell");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("params" + std::string(35, ' ') + "  cell\n" +
                              std::string(41, '-') + "  ----\n" +
                              "every=1 checkpointing=none precision=fp32     0\n"),
            std::string::npos)
      << again.output;
}

// --columns is checked before anything runs: an unknown name exits 2 and lists the columns.
TEST(RunCommandTest, UnknownSummaryColumnExitsTwoBeforeRunning) {
  const fs::path dir = FreshTempDir("bad_columns");
  const fs::path db = dir / "r.db";
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") + " --db " +
                                  db.string() + " --columns cell,peak");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: --columns: 'peak' is no column of the summary table; its "
                            "columns: cell, status, params, peak_allocated, tokens_per_s, "
                            "final_loss, error, verdict, peak_reserved, repeat"),
            std::string::npos)
      << out.output;
  EXPECT_FALSE(fs::exists(db));
}

TEST(RunCommandTest, QuickstartRunsEveryCellAndRecordsTheOomCell) {
  const fs::path dir = FreshTempDir("quickstart");
  const fs::path db_path = dir / "r.db";
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") +
                                      " --set experiment.steps=4 --db " + db_path.string(),
                                  "env -u COLUMNS");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("4 cells: 3 ok, 1 oom, 0 failed, 0 timed out"), std::string::npos)
      << out.output;
  // In 100 columns the error column does not fit: the oom cell's error is printed under the
  // table.
  EXPECT_NE(out.output.find("left out to fit 100 columns: verdict, error;"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("\ncell 2: memsweep device out of memory. Tried to allocate"),
            std::string::npos)
      << out.output;
  memsweep::results::ResultsDb db(db_path.string(), memsweep::results::ResultsDb::Mode::kReadOnly);
  const auto rows = db.Query(
      "SELECT status, json_extract(params, '$.\"strategies.batching.micro_batch_size\"'), "
      "json_extract(params, '$.\"device.memory_budget\"') FROM run_summary ORDER BY cell_index");
  ASSERT_EQ(rows.rows.size(), 4u);
  EXPECT_EQ(*rows.rows[2][0], "oom");  // 8 rows in 24 MiB
  EXPECT_EQ(*rows.rows[2][1], "8");
  EXPECT_EQ(*rows.rows[2][2], "24MiB");
  // Each finished cell keeps its full result and summary beside the database, in its folder.
  int kept = 0;
  for (const auto& entry : fs::directory_iterator(dir / "r" / "quickstart")) {
    kept += entry.path().extension() == ".txt";
  }
  EXPECT_EQ(kept, 4);
}

}  // namespace
