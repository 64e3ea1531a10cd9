// Output formats: aligned tables, RFC 4180 CSV, JSON that keeps SQLite's numbers as numbers.
#include "core/results/output_format.h"

#include <gtest/gtest.h>

#include <string>

#include "core/results/results_db.h"
#include "support/results_db_fixtures.h"

namespace memsweep::results {
namespace {

using testing_support::FreshDbPath;

QueryResult Select(const std::string& sql) {
  ResultsDb db(FreshDbPath(), ResultsDb::Mode::kReadWrite);
  return db.Query(sql);
}

TEST(OutputFormatTest, ParsesFormatNames) {
  EXPECT_EQ(ParseOutputFormat("table"), OutputFormat::kTable);
  EXPECT_EQ(ParseOutputFormat("csv"), OutputFormat::kCsv);
  EXPECT_EQ(ParseOutputFormat("json"), OutputFormat::kJson);
  EXPECT_FALSE(ParseOutputFormat("xml").has_value());
}

TEST(OutputFormatTest, CsvQuotesOnlyWhatRfc4180Requires) {
  const QueryResult result = Select(
      "SELECT 'plain' AS a, 'with,comma' AS \"b,c\", 'say \"hi\"' AS d, 'two\nlines' AS e, "
      "NULL AS f, 42 AS g, 0.5 AS h, '' AS i");
  EXPECT_EQ(FormatCsv(result),
            "a,\"b,c\",d,e,f,g,h,i\r\n"
            "plain,\"with,comma\",\"say \"\"hi\"\"\",\"two\nlines\",,42,0.5,\r\n");
}

TEST(OutputFormatTest, JsonKeepsIntegersAndRealsAsNumbers) {
  const QueryResult result = Select(
      "SELECT 1 AS i, 2.5 AS r, 3.0 AS whole, 0.1 + 0.2 AS sum, 'x' AS t, '7' AS digits, "
      "NULL AS n, 9007199254740993 AS big");
  const nlohmann::ordered_json json = QueryResultToJson(result);
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 1u);
  const auto& row = json[0];
  EXPECT_TRUE(row["i"].is_number_integer());
  EXPECT_EQ(row["i"], 1);
  EXPECT_TRUE(row["r"].is_number_float());
  EXPECT_EQ(row["r"].get<double>(), 2.5);
  EXPECT_TRUE(row["whole"].is_number_float());
  EXPECT_EQ(row["sum"].get<double>(), 0.1 + 0.2);  // full precision, not SQLite's 15 digits
  EXPECT_EQ(row["t"], "x");
  EXPECT_TRUE(row["digits"].is_string());
  EXPECT_TRUE(row["n"].is_null());
  EXPECT_EQ(row["big"].get<int64_t>(), 9007199254740993);
  // Keys stay in column order.
  EXPECT_EQ(json.dump(), R"([{"i":1,"r":2.5,"whole":3.0,"sum":0.30000000000000004,"t":"x",)"
                         R"("digits":"7","n":null,"big":9007199254740993}])");
  EXPECT_EQ(FormatQueryResult(Select("SELECT 1 AS a WHERE 0"), OutputFormat::kJson), "[]\n");
}

TEST(OutputFormatTest, TableAlignsColumnsForReading) {
  const QueryResult result = Select(
      "SELECT 'ok' AS status, 57671680 AS peak_allocated_bytes, 17503.3123 AS tokens_per_s, "
      "NULL AS error UNION ALL "
      "SELECT 'oom', 1024, 0.0978, 'out of\nmemory'");
  EXPECT_EQ(FormatTable(result),
            "status  peak_allocated_bytes  tokens_per_s  error\n"
            "------  --------------------  ------------  --------------\n"
            "ok                 55.00 MiB       17503.3\n"
            "oom                 1.00 KiB        0.0978  out of\\nmemory\n");
}

TEST(OutputFormatTest, TableCutsLongValues) {
  const QueryResult result = Select("SELECT printf('%.100c', 'x') AS long");
  const std::string table = FormatTable(result);
  EXPECT_NE(table.find(std::string(57, 'x') + "...\n"), std::string::npos) << table;
  EXPECT_EQ(table.find(std::string(58, 'x')), std::string::npos) << table;
}

// `memsweep query`'s tables: the last column (an error, typically) runs as long as it is, its
// further lines under its first; other columns are still cut, and the cuts are counted.
TEST(OutputFormatTest, AWholeLastColumnRunsLongAndKeepsItsLineBreaks) {
  const QueryResult result = Select(
      "SELECT 'oom' AS status, printf('%.100c', 'x') AS note, "
      "printf('%.100c', 'y') || char(10) || 'second line' AS error");
  const std::string table = FormatTable(result, {.whole_last_column = true});
  EXPECT_NE(table.find(std::string(57, 'x') + "...  " + std::string(100, 'y') + "\n"),
            std::string::npos) << table;
  // Under the column's start: "status" (6) + 2 + the note's 60 + 2.
  EXPECT_NE(table.find("\n" + std::string(70, ' ') + "second line\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("------  " + std::string(60, '-') + "  " + std::string(60, '-') + "\n"),
            std::string::npos) << table;
  EXPECT_EQ(CutTableValues(result, {.whole_last_column = true}), 1u);
  EXPECT_EQ(CutTableValues(result), 2u);
  EXPECT_EQ(FormatQueryResult(result, OutputFormat::kTable), table);
  // Without the option, as before: cut, line breaks shown as \n.
  EXPECT_EQ(FormatTable(result).find(std::string(58, 'y')), std::string::npos);
}

TEST(OutputFormatTest, TableLeavesColumnsNamedUncutWhole) {
  const QueryResult result =
      Select("SELECT printf('%.100c', 'x') AS params, printf('%.100c', 'y') AS error");
  const std::string table = FormatTable(result, {.uncut = {"params"}});
  EXPECT_NE(table.find(std::string(100, 'x') + "  "), std::string::npos) << table;
  EXPECT_NE(table.find(std::string(57, 'y') + "...\n"), std::string::npos) << table;
  EXPECT_EQ(CutTableValues(result, {.uncut = {"params"}}), 1u);
}

TEST(OutputFormatTest, RealTextIsShortestRoundTrip) {
  EXPECT_EQ(RealToText(0.5), "0.5");
  EXPECT_EQ(RealToText(2.0), "2.0");
  EXPECT_EQ(RealToText(1e-05), "1e-05");
  EXPECT_EQ(RealToText(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(RealToText(1.0 / 3.0), "0.3333333333333333");
}

}  // namespace
}  // namespace memsweep::results
