// Runs the memsweep binary as a user would and checks exit codes and files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_configs.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::SourcePath;

struct Outcome {
  int exit_code;
  std::string output;
};

Outcome RunMemsweep(const std::string& args) {
  const std::string command = std::string(MEMSWEEP_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

fs::path TempDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("memsweep_cli_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(RunCommandTest, BadInputExitsTwoAndWritesNothing) {
  const fs::path dir = TempDir("bad");
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

TEST(RunCommandTest, RunsAnExperimentAndWritesItsJson) {
  const fs::path dir = TempDir("ok");
  const fs::path json = dir / "out.json";
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") +
                                  " --quiet --set experiment.steps=4 --json " + json.string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("tokens/s"), std::string::npos) << out.output;
  std::ifstream in(json);
  const nlohmann::json result = nlohmann::json::parse(in);
  EXPECT_EQ(result["status"], "ok");
  EXPECT_EQ(result["steps"].size(), 4u);
  EXPECT_EQ(result["config"]["experiment"]["steps"], 4);
  EXPECT_GT(result["memory"]["peak_allocated_bytes"].get<int64_t>(), 0);
}

TEST(RunCommandTest, BudgetOomIsAResultNotACrash) {
  const fs::path json = TempDir("oom") / "out.json";
  const Outcome out = RunMemsweep("run " + SourcePath("experiments/quickstart.toml") +
                                  " --quiet --set device.memory_budget=\"4MiB\" --json " +
                                  json.string());
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("'quickstart': oom"), std::string::npos) << out.output;
  std::ifstream in(json);
  const nlohmann::json result = nlohmann::json::parse(in);
  EXPECT_EQ(result["status"], "oom");
  EXPECT_GT(result["oom"]["requested_bytes"].get<int64_t>(), 0);
}

}  // namespace
