// Runs the memsweep binary as a user would and checks exit codes and files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

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
  const fs::path json = dir / "out.json";
  const Outcome out = RunMemsweep("run " + file.string() + " --json " + json.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find(file.string() + ":4:1: unknown key 'hiden_size'"), std::string::npos)
      << out.output;
  EXPECT_FALSE(fs::exists(json));
}

TEST(RunCommandTest, RunsOneCellOfAMatrixAndWritesItsJson) {
  const fs::path dir = FreshTempDir("ok");
  const fs::path json = dir / "out.json";
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") +
                                  " --cell 3 --quiet --set experiment.steps=4 --json " +
                                  json.string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("tokens/s"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("cell 3 (data.micro_batch_size=8 device.memory_budget=64MiB, repeat 0, "
                            "seed 1234), hash "),
            std::string::npos)
      << out.output;
  std::ifstream in(json);
  const nlohmann::json result = nlohmann::json::parse(in);
  EXPECT_EQ(result["status"], "ok");
  EXPECT_EQ(result["steps"].size(), 4u);
  EXPECT_EQ(result["config"]["experiment"]["steps"], 4);
  EXPECT_EQ(result["config"]["data"]["micro_batch_size"], 8);
  EXPECT_EQ(result["cell"]["index"], 3);
  EXPECT_EQ(result["cell"]["params"]["device.memory_budget"], "64MiB");
  EXPECT_EQ(result["cell"]["hash"].get<std::string>().size(), 16u);
  EXPECT_GT(result["memory"]["peak_allocated_bytes"].get<int64_t>(), 0);
}

TEST(RunCommandTest, BudgetOomIsAResultNotACrash) {
  const fs::path json = FreshTempDir("oom") / "out.json";
  // --set pins the budget for every cell; cell 1 is then 8 rows in 4 MiB.
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") +
                                  " --cell 1 --quiet --set device.memory_budget=\"4MiB\" --json " +
                                  json.string());
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("'quickstart': oom"), std::string::npos) << out.output;
  std::ifstream in(json);
  const nlohmann::json result = nlohmann::json::parse(in);
  EXPECT_EQ(result["status"], "oom");
  EXPECT_GT(result["oom"]["requested_bytes"].get<int64_t>(), 0);
}

TEST(RunCommandTest, AMatrixFileNeedsACell) {
  const fs::path json = FreshTempDir("matrix") / "out.json";
  const std::string file = SourcePath("experiments/quickstart.toml");
  Outcome out = RunMemsweep("run " + file + " --json " + json.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("[matrix] describes several runs"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("memsweep plan " + file), std::string::npos) << out.output;
  out = RunMemsweep("run " + file + " --cell 4 --json " + json.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--cell 4 does not exist: the plan has 4 cells (0..3)"),
            std::string::npos)
      << out.output;
  EXPECT_FALSE(fs::exists(json));
}

}  // namespace
