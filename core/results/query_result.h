// QueryResult: the rows of one SQL query as text, with the storage class SQLite reported for
// every value, so that formatters can keep numbers as numbers (output_format.h).
//
//   QueryResult result = db.Query("SELECT run_id, tokens_per_s FROM run_summary");
//   for (const auto& row : result.rows) std::cout << row[1].value_or("NULL") << "\n";
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/results/sqlite_handles.h"

namespace memsweep::results {

struct QueryResult {
  std::vector<std::string> columns;
  // nullopt is SQL NULL. INTEGER values as decimal digits; REAL values in the shortest text that
  // reads back as the same double (always with a '.' or an exponent, e.g. "2.0", "1e-05").
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::vector<std::vector<ValueKind>> kinds;  // same shape as rows

  void AddRow(std::vector<std::optional<std::string>> values, std::vector<ValueKind> value_kinds) {
    rows.push_back(std::move(values));
    kinds.push_back(std::move(value_kinds));
  }
};

// REAL text as QueryResult stores it ("0.1", "2.0", "1e-05", "inf").
std::string RealToText(double value);

}  // namespace memsweep::results
