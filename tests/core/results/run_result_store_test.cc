// The results database's columns and the result figures' one table (core/train/result_fields.h)
// agree: every column the store fills exists in the schema, and every figure column of the schema
// is filled from the table.
#include "core/results/run_result_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/results/results_db.h"
#include "core/results/sqlite_handles.h"
#include "core/train/result_fields.h"
#include "support/results_db_fixtures.h"

namespace memsweep::results {
namespace {

std::set<std::string> SchemaColumns(const std::string& path, const std::string& table) {
  SqliteConnection db(path, SqliteConnection::Access::kReadOnly);
  SqliteStatement info = db.Prepare("SELECT name FROM pragma_table_info('" + table + "')");
  std::set<std::string> columns;
  while (info.Step()) columns.insert(info.ColumnText(0));
  return columns;
}

TEST(RunResultStoreTest, EveryFigureTableMatchesTheSchemaColumnForColumn) {
  const std::string path = testing_support::FreshDbPath();
  { ResultsDb db(path, ResultsDb::Mode::kReadWrite); }
  for (const std::string table : {"run_metrics", "environments", "run_ranks"}) {
    const std::vector<std::string> stored = StoredColumns(table);
    std::set<std::string> expected(stored.begin(), stored.end());
    EXPECT_EQ(expected.size(), stored.size()) << table << ": a column is filled twice";
    expected.insert("run_id");
    // Kept for rows written by older versions, no longer filled (schema.cc, version 4).
    if (table == "environments") expected.insert("gemm_backend");
    EXPECT_EQ(SchemaColumns(path, table), expected) << table;
  }
}

TEST(RunResultStoreTest, FiguresComeFromTheirStructMembersWithOneUnitEach) {
  train::RunResult result;
  result.memory.peak_allocated_bytes = 123;
  result.memory.saved_activations_bytes = 7;
  result.dist.comm_calls = 5;
  result.dist.host_pool_peak_bytes = 9;
  result.summary.tokens_per_s = 2.5;
  result.environment.cuda_build = true;
  const nlohmann::json memory = train::FieldsToJson(result.memory, train::MemoryFields());
  EXPECT_EQ(memory.at("peak_allocated_bytes"), 123);
  EXPECT_EQ(memory.at("saved_activations_bytes"), 7);
  // Per-rank rows carry only the figures marked for them.
  const nlohmann::json rank_memory =
      train::FieldsToJson(result.memory, train::MemoryFields(), train::kRankRow);
  EXPECT_EQ(rank_memory.at("peak_allocated_bytes"), 123);
  EXPECT_FALSE(rank_memory.contains("saved_activations_bytes"));
  const nlohmann::json rank = train::FieldsToJson(result.dist, train::RankFigureFields(),
                                                  train::kRankRow);
  EXPECT_EQ(rank.at("comm_calls"), 5);
  EXPECT_EQ(rank.at("host_pool_peak_bytes"), 9);
  EXPECT_FALSE(train::FieldsToJson(result.dist, train::RankFigureFields()).contains("comm_calls"));
  EXPECT_EQ(train::FieldsToJson(result.summary, train::SummaryFields()).at("tokens_per_s"), 2.5);
  EXPECT_EQ(train::FieldsToJson(result.environment, train::EnvironmentFields()).at("cuda_build"),
            true);
  // Byte figures are named *_bytes and nothing else is.
  for (const auto& field : train::MemoryFields()) {
    const std::string name = field.name;
    const bool bytes_name = name.size() > 6 && name.substr(name.size() - 6) == "_bytes";
    EXPECT_EQ(bytes_name, field.unit == train::Unit::kBytes) << name;
  }
  EXPECT_STREQ(train::UnitName(train::Unit::kTokensPerSecond), "tokens/s");
}

}  // namespace
}  // namespace memsweep::results
