// `memsweep query` as a user runs it: output formats, and exit code 2 for bad SQL, writes and a
// missing database.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "support/ablation_db.h"
#include "support/results_db_fixtures.h"
#include "support/cli_runner.h"

namespace {

using memsweep::testing_support::BuildAblationDb;
using memsweep::testing_support::FreshDbPath;
using memsweep::testing_support::RunMemsweep;

TEST(QueryCommandTest, PrintsRowsInEachFormat) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  const std::string sql =
      "\"SELECT cell_index, status, tokens_per_s FROM run_summary WHERE experiment = 'ablation' "
      "AND cell_index = 1\"";

  auto out = RunMemsweep("query --db " + db + " --format csv " + sql);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output, "cell_index,status,tokens_per_s\r\n1,ok,400.0\r\n");

  out = RunMemsweep("query --db " + db + " --format json " + sql);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto json = nlohmann::json::parse(out.output);
  EXPECT_EQ(json[0]["cell_index"], 1);
  EXPECT_EQ(json[0]["tokens_per_s"].get<double>(), 400.0);

  out = RunMemsweep("query --db " + db + " " + sql);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output,
            "cell_index  status  tokens_per_s\n"
            "----------  ------  ------------\n"
            "         1  ok               400\n"
            "(1 row)\n");
}

// A long error, last in the select list, is printed whole (--wide: on one line); a value cut
// elsewhere is counted under the table with the way to read it whole.
TEST(QueryCommandTest, TheLastColumnIsShownWhole) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  const std::string error =
      "memsweep device out of memory. Tried to allocate 512.00 KiB; 23.54 MiB allocated of a "
      "24.00 MiB budget in forward of step 0";
  auto out = RunMemsweep("query --db " + db + " --wide \"SELECT 1 AS cell, '" + error +
                         "' AS error\"");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("   1  " + error + "\n(1 row)\n"), std::string::npos) << out.output;
  // Fitted to 100 columns (not a terminal): wrapped under the column's start, nothing cut.
  out = RunMemsweep("query --db " + db + " \"SELECT 1 AS cell, '" + error + "' AS error\"",
                    "env -u COLUMNS");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output,
            "cell  error\n"
            "----  ------------------------------------------------------------\n"
            "   1  memsweep device out of memory. Tried to allocate 512.00 KiB; 23.54 MiB allocated "
            "of a 24.00\n"
            "      MiB budget in forward of step 0\n"
            "(1 row)\n");

  out = RunMemsweep("query --db " + db + " --wide \"SELECT '" + error + "' AS error, 1 AS cell\"");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("(1 row; 1 value cut at 60 characters: the last column is shown "
                            "whole, --format csv or json shows every value whole)\n"),
            std::string::npos)
      << out.output;
}

// A result wider than the terminal keeps the first and last columns and leaves out the others
// from the right, and says so; --columns chooses, in every format.
TEST(QueryCommandTest, FitsTheTerminalWidthAndColumnsChooses) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  const std::string sql =
      "\"SELECT run_id, experiment, cell_index, repeat, status, params, peak_allocated_bytes, "
      "peak_reserved_bytes, tokens_per_s, final_loss, error FROM run_summary ORDER BY run_id\"";
  auto out = RunMemsweep("query --db " + db + " " + sql, "COLUMNS=60");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  std::istringstream lines(out.output);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 60u) << out.output;
  // status (8 with its gap) does not fit beside the first four and the error; final_loss does.
  EXPECT_EQ(out.output.rfind("run_id  experiment  cell_index  repeat  loss  error\n", 0), 0u)
      << out.output;
  EXPECT_NE(out.output.find("(5 columns left out to fit 60 columns: status, params,"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("(6 rows)\n"), std::string::npos) << out.output;

  out = RunMemsweep("query --db " + db + " --columns status,run_id " + sql);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output.rfind("status  run_id\n------  ------\nok           1\n", 0), 0u)
      << out.output;
  out = RunMemsweep("query --db " + db + " --format csv --columns status,run_id " + sql);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output.rfind("status,run_id\r\nok,1\r\n", 0), 0u) << out.output;

  out = RunMemsweep("query --db " + db + " --columns status,nope " + sql);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: --columns: 'nope' is no column of the query's result; its "
                            "columns: run_id, experiment, cell_index, repeat, status, params, "
                            "peak_allocated_bytes, peak_reserved_bytes, tokens_per_s, "
                            "final_loss, error"),
            std::string::npos)
      << out.output;
}

TEST(QueryCommandTest, BadSqlExitsTwoWithSqlitesMessage) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  auto out = RunMemsweep("query --db " + db + " \"SELECT nope FROM run_summary\"");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: " + db + ": no such column: nope"), std::string::npos)
      << out.output;

  out = RunMemsweep("query --db " + db + " \"DELETE FROM runs\"");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("readonly"), std::string::npos) << out.output;

  out = RunMemsweep("query --db " + db + " --format xml \"SELECT 1\"");
  EXPECT_EQ(out.exit_code, 2) << out.output;

  // query cannot write, attach or lift its read-only settings (docs/results.md).
  for (const std::string sql : {"ATTACH '" + db + ".x' AS x", std::string("PRAGMA query_only = OFF"),
                                std::string("PRAGMA writable_schema = ON")}) {
    out = RunMemsweep("query --db " + db + " \"" + sql + "\"");
    EXPECT_EQ(out.exit_code, 2) << sql << ": " << out.output;
    EXPECT_NE(out.output.find("not authorized"), std::string::npos) << out.output;
  }
  EXPECT_FALSE(std::filesystem::exists(db + ".x"));
}

TEST(QueryCommandTest, OneColumnAndNoRowsPrintAsTables) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  auto out = RunMemsweep("query --db " + db + " \"SELECT 1 WHERE 0\"", "env -u COLUMNS");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output, "1\n-\n(0 rows)\n");
  out = RunMemsweep("query --db " + db + " \"SELECT count(*) AS n FROM runs\"", "env -u COLUMNS");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(out.output, "n\n-\n6\n(1 row)\n");
}

TEST(QueryCommandTest, MissingDatabaseExitsTwo) {
  const std::string db = FreshDbPath();
  const auto out = RunMemsweep("query --db " + db + " \"SELECT 1\"");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("no such results database"), std::string::npos) << out.output;
}

}  // namespace
