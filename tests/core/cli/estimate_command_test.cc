// `memsweep estimate` as a user runs it: the quickstart's cells estimated equal `memsweep run`'s
// measured peaks; bad input exits 2 naming it.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace {

using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;
using memsweep::testing_support::SourcePath;

// The CSV's rows after its header, each split at commas (the quickstart's fields hold none).
std::vector<std::vector<std::string>> Rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> fields;
    std::istringstream parts(line);
    std::string field;
    while (std::getline(parts, field, ',')) fields.push_back(field);
    rows.push_back(fields);
  }
  return rows;
}

TEST(EstimateCommandTest, TheQuickstartsEstimateEqualsItsMeasuredRun) {
  const std::string db = (FreshTempDir("estimate_cli") / "q.db").string();
  const std::string file = SourcePath("experiments/quickstart.toml");
  const Outcome run = RunMemsweep("run " + file + " --db " + db);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Outcome measured = RunMemsweep(
      "query --db " + db + " --format csv \"SELECT cell_index, status, peak_allocated_bytes, "
      "peak_reserved_bytes, largest_allocation_bytes, estimate_status, "
      "estimated_peak_allocated_bytes, estimated_peak_reserved_bytes, estimate_error "
      "FROM run_summary ORDER BY cell_index\"");
  ASSERT_EQ(measured.exit_code, 0) << measured.output;
  const Outcome estimated = RunMemsweep("estimate " + file + " --format csv");
  ASSERT_EQ(estimated.exit_code, 0) << estimated.output;
  const auto m = Rows(measured.output);
  const auto e = Rows(estimated.output);
  ASSERT_EQ(m.size(), 4u) << measured.output;
  ASSERT_EQ(e.size(), 4u) << estimated.output;
  for (size_t i = 0; i < m.size(); ++i) {
    // estimate's columns: cell, label, status, device, target, budget_bytes,
    // peak_allocated_bytes, peak_reserved_bytes, ... largest_allocation_bytes (18th)
    ASSERT_GE(e[i].size(), 18u) << estimated.output;
    const std::string verdict = m[i][1] == "ok" ? "fits" : m[i][1];
    EXPECT_EQ(e[i][2], verdict) << "cell " << i;
    const double measured_peak = std::stod(m[i][2]), estimated_peak = std::stod(e[i][6]);
    EXPECT_LE(std::abs(estimated_peak - measured_peak) / measured_peak, 0.01)
        << "cell " << i << ": " << m[i][2] << " measured, " << e[i][6] << " estimated";
    EXPECT_EQ(e[i][17], m[i][4]) << "cell " << i << ": the largest allocation";
    // The run stored the same estimate beside its measurement (run_summary's estimated_*),
    // and its error where the cell ran ok.
    ASSERT_GE(m[i].size(), 8u) << measured.output;
    EXPECT_EQ(m[i][5], e[i][2]) << "cell " << i << ": estimate_status";
    EXPECT_EQ(m[i][6], e[i][6]) << "cell " << i << ": estimated_peak_allocated_bytes";
    EXPECT_EQ(m[i][7], e[i][7]) << "cell " << i << ": estimated_peak_reserved_bytes";
    if (m[i][1] == "ok") {
      EXPECT_NEAR(std::stod(m[i][8]), (estimated_peak - measured_peak) / measured_peak, 1e-12)
          << "cell " << i;
    } else {
      EXPECT_EQ(m[i].size(), 8u) << "cell " << i << ": no estimate_error for an oom run";
    }
  }
  // compare shows the estimate beside the measurement.
  const Outcome compare = RunMemsweep("compare --db " + db + " --format csv");
  ASSERT_EQ(compare.exit_code, 0) << compare.output;
  EXPECT_NE(compare.output.find("estimated_peak_allocated_bytes"), std::string::npos)
      << compare.output;
  EXPECT_NE(compare.output.find(e[0][6]), std::string::npos) << compare.output;
  // --no-estimate leaves the columns empty.
  const std::string bare = (FreshTempDir("estimate_cli_bare") / "q.db").string();
  ASSERT_EQ(RunMemsweep("run " + file + " --db " + bare + " --no-estimate").exit_code, 0);
  const Outcome none = RunMemsweep("query --db " + bare + " --format csv \"SELECT count(*) FROM "
                                   "run_summary WHERE estimate_status IS NOT NULL\"");
  EXPECT_EQ(Rows(none.output).at(0).at(0), "0") << none.output;
}

// `memsweep estimate` of the quickstart's cells, one step each, with `options` (a format, a card),
// on a terminal wide enough that no verdict is wrapped.
Outcome OneStepQuickstartEstimate(const std::string& options) {
  return RunMemsweep("estimate " + SourcePath("experiments/quickstart.toml") +
                         " --set experiment.steps=1 " + options,
                     "COLUMNS=1000");
}

// A card whose capacity leaves the first cell less than 1 % of headroom: it fits, flagged
// marginal in the CSV and the table.
TEST(EstimateCommandTest, AFitWithinOnePercentOfTheCardIsMarginal) {
  const Outcome first = OneStepQuickstartEstimate("--format csv");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const long long reserved = std::stoll(Rows(first.output).at(0).at(7));
  for (const long long spare : {reserved / 200, reserved / 20}) {
    const std::string device = "--device " + std::to_string(reserved + spare);
    const Outcome csv = OneStepQuickstartEstimate("--format csv " + device);
    ASSERT_EQ(csv.exit_code, 0) << csv.output;
    const std::vector<std::string> row = Rows(csv.output).at(0);
    ASSERT_GE(row.size(), 24u) << csv.output;
    EXPECT_EQ(row[2], "fits") << csv.output;
    EXPECT_EQ(row[23], spare < reserved / 100 ? "true" : "false") << "spare " << spare;
    const Outcome table = OneStepQuickstartEstimate(device);
    EXPECT_EQ(table.output.find("marginal") != std::string::npos, spare < reserved / 100)
        << table.output;
  }
}

// The mirror for a card too small: an oom that a card 1 % larger would fit (the estimate runs the
// cell again at that size) is flagged marginal; one 5 % short is not. Cards below the peak
// allocated bytes, so that every allocator runs out.
TEST(EstimateCommandTest, AnOomThatACardOnePercentLargerWouldFitIsMarginal) {
  const Outcome first = OneStepQuickstartEstimate("--format csv");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const long long allocated = std::stoll(Rows(first.output).at(0).at(6));
  for (const long long missing : {allocated / 200, allocated / 20}) {
    const std::string device = "--device " + std::to_string(allocated - missing);
    const Outcome csv = OneStepQuickstartEstimate("--format csv " + device);
    ASSERT_EQ(csv.exit_code, 0) << csv.output;
    const std::vector<std::string> row = Rows(csv.output).at(0);
    ASSERT_GE(row.size(), 26u) << csv.output;
    EXPECT_EQ(row[2], "oom") << csv.output;
    const bool marginal = missing == allocated / 200;
    EXPECT_EQ(row[23], marginal ? "true" : "false") << "missing " << missing;
    // The failing request's shortfall: above 0, at most what the card misses of the peak.
    const long long short_bytes = std::stoll(row[25]);
    EXPECT_GT(short_bytes, 0);
    EXPECT_LE(short_bytes, missing);
    const Outcome table = OneStepQuickstartEstimate(device);
    EXPECT_EQ(table.output.find("marginal: a card 1 % larger fits it") != std::string::npos,
              marginal)
        << table.output;
  }
}

TEST(EstimateCommandTest, ATableWithTheVerdictAgainstANamedGpu) {
  const Outcome out =
      RunMemsweep("estimate " + SourcePath("experiments/quickstart.toml") + " --device a10g");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("peak_alloc"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("fits"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("(a10g)"), std::string::npos) << out.output;
  // --format markdown: a header, its rule and one row per cell, each with the same 8 cells.
  const Outcome md = RunMemsweep("estimate " + SourcePath("experiments/quickstart.toml") +
                                 " --device a10g --format markdown");
  ASSERT_EQ(md.exit_code, 0) << md.output;
  std::istringstream lines(md.output);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 2u + 4u) << md.output;
  EXPECT_EQ(rows[1], "|---|---|---|---|---|---|---|---|");
  for (const std::string& row : rows) {
    size_t bars = 0;
    for (size_t i = 0; i < row.size(); ++i) bars += row[i] == '|' && (i == 0 || row[i - 1] != '\\');
    EXPECT_EQ(bars, 9u) << row;
  }
  EXPECT_EQ(rows[2].rfind("| 0 | ", 0), 0u) << rows[2];
  EXPECT_NE(rows[2].find("| fits |"), std::string::npos) << rows[2];
}

TEST(EstimateCommandTest, AnUnknownGpuOrABadSizeExitsTwoListingTheNames) {
  for (const char* device : {"h300", "lots", "0GiB"}) {
    const Outcome out = RunMemsweep("estimate " + SourcePath("experiments/quickstart.toml") +
                                    " --device " + device);
    EXPECT_EQ(out.exit_code, 2) << device << "\n" << out.output;
    EXPECT_NE(out.output.find(std::string("--device '") + device + "'"), std::string::npos)
        << out.output;
    EXPECT_NE(out.output.find("a10g"), std::string::npos) << out.output;
  }
  for (const char* arch : {"h100", "sm_9x", "1000"}) {
    const Outcome out = RunMemsweep("estimate " + SourcePath("experiments/quickstart.toml") +
                                    " --arch " + arch);
    EXPECT_EQ(out.exit_code, 2) << arch << "\n" << out.output;
    EXPECT_NE(out.output.find(std::string("--arch '") + arch + "'"), std::string::npos)
        << out.output;
    EXPECT_NE(out.output.find("sm_86"), std::string::npos) << out.output;
  }
  const Outcome missing = RunMemsweep("estimate " + SourcePath("experiments/nope.toml"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
}

// A plugin that cannot run on the device a cell's estimate stands for makes the cell
// `unsupported`, with plan's words — a cell the estimate cannot run, not bad input (exit 0):
// precision/fp16 (CUDA only) in the CPU quickstart. In a CUDA cell it is estimated
// (EstimateTest.AnFp16CellIsEstimatedForCudaAndRefusedForTheCpu).
TEST(EstimateCommandTest, ACellWhosePluginRefusesItsDeviceIsUnsupportedNotBadInput) {
  const Outcome out = RunMemsweep("estimate " + SourcePath("experiments/quickstart.toml") +
                                  " --format csv --set experiment.steps=1 "
                                  "--set 'strategies.precision.plugin=\"fp16\"'");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto rows = Rows(out.output);
  ASSERT_EQ(rows.size(), 4u) << out.output;
  for (const auto& row : rows) {
    ASSERT_GE(row.size(), 3u) << out.output;
    EXPECT_EQ(row[2], "unsupported") << out.output;
  }
  EXPECT_NE(out.output.find("cannot run on the CPU device"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("bf16-autocast"), std::string::npos) << out.output;
}

}  // namespace
