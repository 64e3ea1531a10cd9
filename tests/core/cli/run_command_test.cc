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

TEST(RunCommandTest, QuickstartRunsEveryCellAndRecordsTheOomCell) {
  const fs::path dir = FreshTempDir("quickstart");
  const fs::path db_path = dir / "r.db";
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") +
                                  " --set experiment.steps=4 --db " + db_path.string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("4 cells: 3 ok, 1 oom, 0 failed, 0 timed out"), std::string::npos)
      << out.output;
  memsweep::results::ResultsDb db(db_path.string(), memsweep::results::ResultsDb::Mode::kReadOnly);
  const auto rows = db.Query(
      "SELECT status, json_extract(params, '$.\"strategies.batching.micro_batch_size\"'), "
      "json_extract(params, '$.\"device.memory_budget\"') FROM run_summary ORDER BY cell_index");
  ASSERT_EQ(rows.rows.size(), 4u);
  EXPECT_EQ(*rows.rows[2][0], "oom");  // 8 rows in 24 MiB
  EXPECT_EQ(*rows.rows[2][1], "8");
  EXPECT_EQ(*rows.rows[2][2], "24MiB");
  // Each finished cell keeps its full result and summary beside the database.
  int kept = 0;
  for (const auto& entry : fs::directory_iterator(dir / "quickstart")) {
    kept += entry.path().extension() == ".txt";
  }
  EXPECT_EQ(kept, 4);
}

}  // namespace
