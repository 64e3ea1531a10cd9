// Helpers for the results-database tests: fresh database paths, the recorded run-result JSON
// fixture, hand-made results with chosen figures, and reading one value back with SQL.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/results/results_db.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {

// A path in a fresh directory named after the running test (and process, for forked writers).
inline std::string FreshDbPath(const std::string& file_name = "memsweep.db") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("memsweep_results_" + std::string(info->test_suite_name()) +
                                     "_" + info->name() + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / file_name).string();
}

// `memsweep run experiments/quickstart.toml --set experiment.steps=3 --json ...`, as recorded.
inline nlohmann::json RecordedRunResult() {
  std::ifstream in(SourcePath("tests/core/results/testdata/quickstart_steps3.json"));
  return nlohmann::json::parse(in);
}

// A result with only the figures `memsweep compare` reads.
inline nlohmann::json FiguresResult(const std::string& status, int64_t peak_allocated_bytes,
                                    int64_t peak_reserved_bytes, double tokens_per_s,
                                    double final_loss) {
  return {{"status", status},
          {"summary", {{"tokens_per_s", tokens_per_s}, {"final_loss", final_loss}}},
          {"memory",
           {{"peak_allocated_bytes", peak_allocated_bytes},
            {"peak_reserved_bytes", peak_reserved_bytes},
            {"activations_bytes", peak_allocated_bytes / 2}}},
          {"steps", nlohmann::json::array()},
          {"timeline", nlohmann::json::array()}};
}

inline results::CellInfo MakeCell(const std::string& cell_hash, int64_t cell_index,
                                  int64_t repeat = 0, const std::string& params_json = "{}") {
  results::CellInfo cell;
  cell.cell_hash = cell_hash;
  cell.cell_index = cell_index;
  cell.repeat = repeat;
  cell.seed = 1000 + cell_index;
  cell.config_json = R"({"experiment":{"name":"test"}})";
  cell.params_json = params_json;
  return cell;
}

// The first value of the first row of `sql`; nullopt for NULL or no row.
inline std::optional<std::string> QueryValue(results::ResultsDb& db, const std::string& sql) {
  const results::QueryResult result = db.Query(sql);
  if (result.rows.empty()) return std::nullopt;
  return result.rows[0][0];
}

inline int64_t QueryCount(results::ResultsDb& db, const std::string& sql) {
  return std::stoll(QueryValue(db, sql).value_or("-1"));
}

}  // namespace memsweep::testing_support
