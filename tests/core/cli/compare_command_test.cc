// `memsweep compare` as a user runs it, on the hand-built ablation of support/ablation_db.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/results/compare.h"
#include "support/ablation_db.h"
#include "support/cli_runner.h"
#include "support/quickstart_shape_db.h"
#include "support/results_db_fixtures.h"

namespace {

using memsweep::testing_support::BuildAblationDb;
using memsweep::testing_support::BuildQuickstartShapeDb;
using memsweep::testing_support::FreshDbPath;
using memsweep::testing_support::RunMemsweep;

TEST(CompareCommandTest, PrintsCellsAndEffects) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  auto out = RunMemsweep("compare --db " + db + " --format csv");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  out.output += RunMemsweep("compare --db " + db + " --format csv --table effects").output;
  EXPECT_NE(out.output.find("\r\n0,1,x,2,ok,1000,1.0,1.0,,,,500,1.0,200.0,1.0,2.5,0.0,reference,,,,,,,"
                            "the reference run\r\n"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("\r\n1,2,x,1,ok,500,0.5,0.5,,,,250,0.5,400.0,2.0,2.75,0.25,n/a,"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("\r\nb,y,1,1,2.0,2.0,0.3333333333333333,-0.375\r\n"), std::string::npos)
      << out.output;

  out = RunMemsweep("compare --db " + db + " --experiment ablation --baseline a=2,b=x");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("experiment 'ablation'"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("4 cells from 5 runs with status ok or oom; 1 other run"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("baseline: cell 1 (a=2, b=x), 1 ok run"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("effect of each factor"), std::string::npos) << out.output;
}

TEST(CompareCommandTest, BadBaselineOrExperimentExitsTwo) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  auto out = RunMemsweep("compare --db " + db + " --baseline b=x");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("give more keys"), std::string::npos) << out.output;
  out = RunMemsweep("compare --db " + db + " --experiment nope");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  out = RunMemsweep("compare --db " + FreshDbPath("missing.db"));
  EXPECT_EQ(out.exit_code, 2) << out.output;
}

std::vector<std::string> CompareOutputLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t WidestCompareLine(const std::string& output) {
  size_t widest = 0;
  for (const std::string& line : CompareOutputLines(output)) widest = std::max(widest, line.size());
  return widest;
}

// The line of `output` that starts with `start`; "" when none does.
std::string CompareLineStarting(const std::string& output, const std::string& start) {
  for (const std::string& line : CompareOutputLines(output)) {
    if (line.rfind(start, 0) == 0) return line;
  }
  return "";
}

// Not a terminal and no COLUMNS: 100 columns. The quickstart's shape keeps its key columns.
TEST(CompareCommandTest, QuickstartShapeFitsOneHundredColumnsWhenNotATerminal) {
  const std::string db = FreshDbPath();
  BuildQuickstartShapeDb(db);
  const auto out = RunMemsweep("compare --db " + db, "env -u COLUMNS");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_LE(WidestCompareLine(out.output), 100u) << out.output;
  EXPECT_EQ(CompareLineStarting(out.output, "cell  "),
            "cell  memory_budget  micro_batch_size  status  peak_alloc  alloc_x  tok/s_x  "
            "loss_delta  verdict")
      << out.output;
  EXPECT_NE(out.output.find("columns left out to fit 100 columns: n, peak_reserved_ratio,"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("--wide shows every column, --columns a,b,c chooses them)"),
            std::string::npos)
      << out.output;
  // The effects table names the factors as the cells table heads them.
  EXPECT_NE(CompareLineStarting(out.output, "micro_batch_size  8  "), "") << out.output;
}

// COLUMNS stands for a terminal's width.
TEST(CompareCommandTest, QuickstartShapeFitsTheWidthColumnsGives) {
  const std::string db = FreshDbPath();
  BuildQuickstartShapeDb(db);
  for (size_t width : {80u, 60u, 132u}) {
    const auto out = RunMemsweep("compare --db " + db, "COLUMNS=" + std::to_string(width));
    ASSERT_EQ(out.exit_code, 0) << out.output;
    EXPECT_LE(WidestCompareLine(out.output), width) << out.output;
    EXPECT_GT(WidestCompareLine(out.output), width - 12) << "room left unused:\n" << out.output;
    EXPECT_NE(out.output.find("left out to fit " + std::to_string(width) + " columns"),
              std::string::npos)
        << out.output;
  }
  const auto at80 = RunMemsweep("compare --db " + db, "COLUMNS=80");
  EXPECT_EQ(CompareLineStarting(at80.output, "cell  "),
            "cell  memory_budget  micro_batch_size  n  status  peak_alloc  alloc_x  tok/s_x")
      << at80.output;
  // Not a width: ignored (not a terminal: 100).
  const auto bad = RunMemsweep("compare --db " + db, "COLUMNS=wide");
  EXPECT_NE(bad.output.find("left out to fit 100 columns"), std::string::npos) << bad.output;
}

// --wide prints every column exactly as before (FormatTable), whatever the width.
TEST(CompareCommandTest, WideIsTheOutputOfEveryColumn) {
  const std::string db = FreshDbPath();
  BuildQuickstartShapeDb(db);
  memsweep::results::ResultsDb reader(db, memsweep::results::ResultsDb::Mode::kReadOnly);
  const memsweep::results::Comparison comparison =
      memsweep::results::Compare(reader, memsweep::results::CompareOptions{});
  const std::string cells = memsweep::results::FormatTable(comparison.cells);
  const std::string effects = memsweep::results::FormatTable(comparison.effects);
  const auto out = RunMemsweep("compare --db " + db + " --wide", "COLUMNS=80");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output,
            memsweep::results::FormatComparison(comparison,
                                                memsweep::results::OutputFormat::kTable));
  EXPECT_NE(out.output.find("\n\n" + cells + "\neffect of each factor (mean over the cells with "
                            "each value, relative to the cells with the baseline's value):\n\n" +
                            effects),
            std::string::npos)
      << out.output;
  EXPECT_GT(WidestCompareLine(out.output), 200u) << out.output;
  EXPECT_EQ(out.output.find("left out"), std::string::npos) << out.output;
}

TEST(CompareCommandTest, ColumnsPicksExactlyThoseInThatOrder) {
  const std::string db = FreshDbPath();
  BuildQuickstartShapeDb(db);
  auto out = RunMemsweep(
      "compare --db " + db + " --columns verdict_reason,cell,micro_batch_size,max_deviation_step",
      "COLUMNS=100");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  // Too wide with full headers (the reason is cut at 60 when not last): short ones.
  EXPECT_EQ(CompareLineStarting(out.output, "reason "),
            "reason" + std::string(54, ' ') + "  cell  micro_batch_size  max_dev_step")
      << out.output;
  EXPECT_EQ(out.output.find("columns left out to fit 100 columns: n,"), std::string::npos)
      << "the cells table leaves nothing out:\n" << out.output;
  // CSV: exactly those columns too, in that order.
  out = RunMemsweep("compare --db " + db + " --format csv --columns cell,status,peak_alloc");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output,
            "cell,status,peak_allocated_bytes\r\n0,ok,15142912\r\n1,ok,15142912\r\n"
            "2,oom,24683520\r\n3,ok,54925312\r\n");
}

TEST(CompareCommandTest, UnknownColumnExitsTwoListingTheColumns) {
  const std::string db = FreshDbPath();
  BuildQuickstartShapeDb(db);
  auto out = RunMemsweep("compare --db " + db + " --columns cell,peak_memory");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: --columns: 'peak_memory' is no column of the cells table; "
                            "its columns: cell, device.memory_budget, "
                            "strategies.batching.micro_batch_size, n, status, "
                            "peak_allocated_bytes,"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("cell  "), std::string::npos) << "nothing printed:\n" << out.output;
  out = RunMemsweep("compare --db " + db + " --table effects --columns factor,cell");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("'cell' is no column of the effects table"), std::string::npos)
      << out.output;
  out = RunMemsweep("compare --db " + db + " --wide --columns cell");
  EXPECT_EQ(out.exit_code, 2) << out.output;
}

// CSV is one table, every column and every value whole, whatever the width.
TEST(CompareCommandTest, CsvIsOneCompleteTable) {
  const std::string db = FreshDbPath();
  BuildQuickstartShapeDb(db);
  memsweep::results::ResultsDb reader(db, memsweep::results::ResultsDb::Mode::kReadOnly);
  const memsweep::results::Comparison comparison =
      memsweep::results::Compare(reader, memsweep::results::CompareOptions{});
  auto out = RunMemsweep("compare --db " + db + " --format csv", "COLUMNS=40");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output, memsweep::results::FormatCsv(comparison.cells));
  const std::vector<std::string> lines = CompareOutputLines(out.output);
  ASSERT_EQ(lines.size(), 5u) << "a header and 4 cells, nothing else:\n" << out.output;
  EXPECT_EQ(lines[0].rfind("cell,device.memory_budget,strategies.batching.micro_batch_size,n,"
                           "status,peak_allocated_bytes,",
                           0),
            0u)
      << out.output;
  EXPECT_NE(lines[0].find(",max_deviation_step,tolerance_rel,verdict_reason\r"), std::string::npos)
      << out.output;
  out = RunMemsweep("compare --db " + db + " --format csv --table effects", "COLUMNS=40");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output, memsweep::results::FormatCsv(comparison.effects));
  out = RunMemsweep("compare --db " + db + " --format json --table effects", "COLUMNS=40");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto json = nlohmann::json::parse(out.output);
  ASSERT_TRUE(json.is_array());
  EXPECT_EQ(json.size(), 4u);
  EXPECT_EQ(json[0]["factor"], "device.memory_budget");
}

}  // namespace
