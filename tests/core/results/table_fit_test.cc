// Tables fitted to a terminal's width: unchanged when they fit, else short headers, the least
// important columns left out (and named), the last column's text wrapped to what is left.
#include "core/results/table_fit.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/config/config_error.h"

namespace memsweep::results {
namespace {

// A table of text columns (numbers where the text is all digits), one row per entry.
QueryResult TextTableForFit(const std::vector<std::string>& columns,
                            const std::vector<std::vector<std::string>>& rows) {
  QueryResult result;
  result.columns = columns;
  for (const auto& row : rows) {
    std::vector<std::optional<std::string>> values;
    std::vector<ValueKind> kinds;
    for (const std::string& value : row) {
      values.push_back(value);
      const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      kinds.push_back(digits ? ValueKind::kInteger : ValueKind::kText);
    }
    result.AddRow(std::move(values), std::move(kinds));
  }
  return result;
}

std::vector<std::string> LinesOfFit(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const std::string kLongReason =
    "not a strategy change: tokens per optimizer step differ, so the losses are not expected to "
    "match and nothing is compared step by step";

TEST(TableFitTest, ATableThatFitsIsPrintedAsFormatTablePrintsIt) {
  const QueryResult table = TextTableForFit({"cell", "status"}, {{"0", "ok"}, {"1", "oom"}});
  const FittedTable fitted = FitTable(table, {.width = 20});
  EXPECT_EQ(fitted.text, FormatTable(table));
  EXPECT_TRUE(fitted.left_out.empty());
  EXPECT_EQ(LeftOutNote(fitted, 20), "");
}

TEST(TableFitTest, LeavesOutTheLeastImportantColumnsAndNamesThem) {
  const QueryResult table = TextTableForFit(
      {"cell", "aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "status"},
      {{"0", "x", "y", "z", "ok"}});
  // 48 columns in all: at 36 the unnamed bbbbbbbbbb goes.
  const FittedTable fitted =
      FitTable(table, {.width = 36, .importance = {"cell", "status", "cccccccccc", "aaaaaaaaaa"}});
  EXPECT_EQ(fitted.text,
            "cell  aaaaaaaaaa  cccccccccc  status\n"
            "----  ----------  ----------  ------\n"
            "   0  x           z           ok\n");
  EXPECT_EQ(fitted.left_out, (std::vector<std::string>{"bbbbbbbbbb"}));
  // At 30 aaaaaaaaaa, named last, goes too.
  const FittedTable narrower =
      FitTable(table, {.width = 30, .importance = {"cell", "status", "cccccccccc", "aaaaaaaaaa"}});
  EXPECT_EQ(narrower.left_out, (std::vector<std::string>{"aaaaaaaaaa", "bbbbbbbbbb"}));
  EXPECT_EQ(LeftOutNote(narrower, 200),
            "(2 columns left out to fit 200 columns: aaaaaaaaaa, bbbbbbbbbb; --wide shows every "
            "column, --columns a,b,c chooses them)\n");
  for (const std::string& line : LinesOfFit(LeftOutNote(narrower, 30))) {
    EXPECT_LE(line.size(), 30u) << line;
  }
}

TEST(TableFitTest, AColumnWithoutValuesGoesFirst) {
  QueryResult table = TextTableForFit({"cell", "verdict", "status"}, {{"0", "", "ok"}});
  table.rows[0][1] = std::nullopt;
  table.kinds[0][1] = ValueKind::kNull;
  table.columns[2] = "status_of_the_cell";
  const FittedTable fitted = FitTable(table, {.width = 26, .importance = {"cell", "verdict"}});
  EXPECT_EQ(fitted.left_out, (std::vector<std::string>{"verdict"})) << fitted.text;
}

TEST(TableFitTest, ShortensHeadersOnlyWhereTheyStayUnambiguous) {
  const QueryResult table = TextTableForFit(
      {"cell", "device.memory_budget", "strategies.batching.micro_batch_size", "model.a.size",
       "data.b.size", "peak_allocated_bytes"},
      {{"0", "24MiB", "2", "1", "2", "15142912"}});
  const FittedTable fitted = FitTable(table, {.width = 80});
  ASSERT_FALSE(LinesOfFit(fitted.text).empty());
  EXPECT_EQ(LinesOfFit(fitted.text)[0],
            "cell  memory_budget  micro_batch_size  a.size  b.size  peak_alloc");
  // Still a byte count under its short header.
  EXPECT_EQ(LinesOfFit(fitted.text)[2], "   0  24MiB                         2       1       2   14.44 MiB");
  EXPECT_TRUE(fitted.left_out.empty());
  // Wide enough for the full headers: they stay.
  EXPECT_EQ(FitTable(table, {.width = 200}).text, FormatTable(table));
}

TEST(TableFitTest, WrapsTheLastColumnsTextToTheWidthLeft) {
  const QueryResult table =
      TextTableForFit({"cell", "verdict", "verdict_reason"},
                      {{"0", "reference", "the reference run"}, {"3", "differs", kLongReason}});
  // cell, verdict and the gaps take 17 columns; the reason starts there.
  for (size_t width : {70u, 50u, 42u}) {
    const FittedTable fitted = FitTable(table, {.width = width});
    std::string joined;
    const std::vector<std::string> lines = LinesOfFit(fitted.text);
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_LE(lines[i].size(), width) << fitted.text;
      if (i >= 2) joined += (joined.empty() ? "" : " ") + lines[i].substr(17);
    }
    EXPECT_NE(joined.find(kLongReason), std::string::npos)
        << "the reason is wrapped, not cut, at " << width << ":\n" << fitted.text;
    EXPECT_TRUE(fitted.left_out.empty());
  }
  EXPECT_GT(TextWidth(FormatTable(table)), 70u) << "the test needs a table wider than 70";
}

TEST(TableFitTest, ColumnsPicksExactlyThoseInTheirOrder) {
  const QueryResult table = TextTableForFit(
      {"cell", "strategies.batching.micro_batch_size", "status", "verdict_reason"},
      {{"0", "2", "ok", kLongReason}});
  const FittedTable fitted =
      FitTable(table, {.width = 100, .columns = {"status", "micro_batch_size", "cell"}});
  EXPECT_EQ(fitted.shown.columns,
            (std::vector<std::string>{"status", "strategies.batching.micro_batch_size", "cell"}));
  EXPECT_EQ(LinesOfFit(fitted.text)[0], "status  strategies.batching.micro_batch_size  cell");
  EXPECT_TRUE(fitted.left_out.empty());
  EXPECT_EQ(SelectColumns(table, {"verdict_reason", "cell"}).rows[0][0], kLongReason);
}

TEST(TableFitTest, UnknownColumnNamesItAndListsTheAvailableOnes) {
  try {
    ResolveColumns({"cell", "nope", "size"}, {"cell", "model.a.size", "data.b.size"},
                   "the cells table");
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--columns: 'nope' is no column; 'size' could be several columns of the cells "
              "table; its columns: cell, model.a.size, data.b.size");
  }
  EXPECT_EQ(ResolveColumns({"a.size", "peak_alloc"}, {"model.a.size", "peak_allocated_bytes"}),
            (std::vector<std::string>{"model.a.size", "peak_allocated_bytes"}));
}

TEST(TableFitTest, WrapTextKeepsCommandsWhole) {
  const std::string command = "  memsweep query \"SELECT cell_index, error FROM run_summary\"";
  EXPECT_EQ(WrapText("one two three four\n" + command, 10), "one two\nthree four\n" + command);
}

}  // namespace
}  // namespace memsweep::results
