// The run report: the JSON document and the summary table carry the run's own figures (checked
// against the RunResult of a real tiny run and against the parameter bytes of the model), and
// the JSON file is written whole or not at all.
#include "core/run_files/run_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_configs.h"

namespace memsweep::run_files {
namespace {

namespace fs = std::filesystem;

TEST(RunReportTest, TheJsonCarriesTheRunsFigures) {
  const config::RunConfig cfg = testing_support::TinyRun(3);
  const train::RunResult r = testing_support::Train(cfg);
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  const nlohmann::json j = RunResultToJson(cfg, r);
  EXPECT_EQ(j["status"], "ok");
  ASSERT_EQ(j["steps"].size(), r.steps.size());
  for (size_t i = 0; i < r.steps.size(); ++i) {
    EXPECT_EQ(j["steps"][i]["loss"].get<double>(), r.steps[i].loss) << "step " << i;
    EXPECT_EQ(j["steps"][i]["tokens"].get<int64_t>(), r.steps[i].tokens) << "step " << i;
  }
  EXPECT_EQ(j["memory"]["peak_allocated_bytes"].get<int64_t>(), r.memory.peak_allocated_bytes);
  // fp32 parameters of the tiny preset: 4 bytes each.
  EXPECT_EQ(j["memory"]["params_bytes"].get<int64_t>(),
            4 * cfg.model.llama.ParameterCount());
  EXPECT_EQ(j["summary"]["final_loss"].get<double>(), r.steps.back().loss);
  EXPECT_EQ(j["config"]["experiment"]["name"], cfg.experiment.name);
}

TEST(RunReportTest, TheSummaryShowsStatusThroughputAndMemory) {
  const config::RunConfig cfg = testing_support::TinyRun(2);
  const train::RunResult r = testing_support::Train(cfg);
  const std::string text = FormatRunSummary(cfg, r);
  for (const char* part : {": ok", "tokens/s", "MFU", "peak allocated", "parameters"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " missing from\n" << text;
  }
}

// An MFU above 100 % measures the calibration, not the run: it is marked wherever it is printed.
TEST(RunReportTest, TheSummaryMarksAnMfuAboveTheGemmPeak) {
  const config::RunConfig cfg = testing_support::TinyRun(2);
  train::RunResult r = testing_support::Train(cfg);
  r.summary.peak_flops = 452e9;
  r.summary.mfu = 1.13;
  r.summary.peak_flops_check = "above_peak";
  std::string text = FormatRunSummary(cfg, r);
  EXPECT_NE(text.find("113.0 % of 452.0 GFLOP/s measured GEMM peak (!) above the peak: the GEMM "
                      "calibration is low, not the run fast"),
            std::string::npos)
      << text;
  r.summary.mfu = 0.9;
  r.summary.peak_flops_check = "remeasured";
  text = FormatRunSummary(cfg, r);
  EXPECT_NE(text.find("90.0 % of 452.0 GFLOP/s measured GEMM peak (re-measured: the run beat the "
                      "kept figure)"),
            std::string::npos)
      << text;
  EXPECT_EQ(RunResultToJson(cfg, r)["summary"]["peak_flops_check"], "remeasured");
}

// A strategies line of any length is printed whole, with its newline (it was cut at 160
// characters, and the next row ran on after it).
TEST(RunReportTest, ALongStrategiesLineIsPrintedWhole) {
  const config::RunConfig cfg = testing_support::TinyRun(1);
  train::RunResult r;
  std::string expected;
  for (int i = 0; i < 12; ++i) {
    train::PluginUse plugin;
    plugin.slot = "slot" + std::to_string(i);
    plugin.name = "a_rather_long_plugin_name_" + std::to_string(i);
    r.plugins.push_back(plugin);
    expected += (expected.empty() ? "" : ", ") + plugin.slot + "=" + plugin.name;
  }
  ASSERT_GT(expected.size(), 300u);
  const std::string text = FormatRunSummary(cfg, r);
  const std::string row = "  strategies" + std::string(28 - 10, ' ') + " " + expected + "\n";
  EXPECT_NE(text.find(row), std::string::npos) << text;
  EXPECT_NE(text.find("\n  device "), std::string::npos) << text;
}

// A cell whose worker failed before a step completed (here: before its model was built) counted
// no parameters: its summary names the model it was configured with, never "0 parameters".
TEST(RunReportTest, AFailedRunsSummaryNamesTheConfiguredModel) {
  const config::RunConfig cfg = testing_support::TinyRun(1);
  train::RunResult r;
  r.status = train::RunStatus::kFailed;
  r.error = "a strategy refused the model";
  const std::string text = FormatRunSummary(cfg, r);
  EXPECT_EQ(text.find("(0 parameters)"), std::string::npos) << text;
  EXPECT_NE(text.find("tiny (configured with " + std::to_string(cfg.model.llama.ParameterCount()) +
                      " parameters; no step completed)\n"),
            std::string::npos)
      << text;
  EXPECT_GT(cfg.model.llama.ParameterCount(), 0);
  EXPECT_NE(text.find(": failed\n  a strategy refused the model\n"), std::string::npos) << text;
}

TEST(RunReportTest, WritesTheWholeFileOrNone) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("memsweep_report_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const nlohmann::json document = {{"status", "ok"}, {"figures", {1, 2, 3}}};
  WriteJsonFile((dir / "nested" / "r.json").string(), document);
  std::ifstream in(dir / "nested" / "r.json");
  EXPECT_EQ(nlohmann::json::parse(in), document);
  EXPECT_FALSE(fs::exists(dir / "nested" / "r.json.tmp"));
  // A target that cannot be written (a directory of that name): an error, and no file appears.
  fs::create_directories(dir / "taken.json");
  EXPECT_ANY_THROW(WriteJsonFile((dir / "taken.json").string(), document));
  EXPECT_TRUE(fs::is_directory(dir / "taken.json"));
  EXPECT_FALSE(fs::exists(dir / "taken.json.tmp"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memsweep::run_files
