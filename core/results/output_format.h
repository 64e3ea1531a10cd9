// Prints a QueryResult as an aligned table for people, as CSV (RFC 4180) or as JSON (an array
// of objects, one per row, keys in column order; INTEGER and REAL values stay JSON numbers).
//
//   std::optional<OutputFormat> format = ParseOutputFormat("csv");
//   std::cout << FormatQueryResult(db.Query("SELECT * FROM run_summary"), *format);
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/results/query_result.h"

namespace memsweep::results {

enum class OutputFormat : uint8_t { kTable, kCsv, kJson };

std::optional<OutputFormat> ParseOutputFormat(std::string_view name);  // "table", "csv", "json"

struct TableOptions {
  // The last column's values are shown whole: never cut, their line breaks starting new lines
  // under the column's start (its rule stays at most 60 wide). For errors and other long text.
  bool whole_last_column = false;
  // Columns whose values are never cut (shown on one line, line breaks as "\n"): the cells
  // table's params, which say which cell a row is.
  std::vector<std::string> uncut;
  // Columns whose INTEGER values are byte counts, shown in binary units as those of columns
  // named "*_bytes" are: the short headers of a fitted table (table_fit.h).
  std::vector<std::string> bytes;
};

// Column names, a rule, then one line per row; two spaces between columns; numeric columns
// right-aligned. For reading, not parsing: NULL is blank, REAL values have 6 significant
// digits, INTEGER values of columns named "*_bytes" are in binary units ("55.00 MiB"), line
// breaks show as "\n" and values longer than 60 characters are cut with "..." (but see
// TableOptions).
std::string FormatTable(const QueryResult& result, const TableOptions& options = {});

// How many values FormatTable cuts with "...".
size_t CutTableValues(const QueryResult& result, const TableOptions& options = {});

// RFC 4180: a header line, CRLF line ends; fields holding a comma, quote, CR or LF are quoted
// with quotes doubled. NULL is an empty field. Values are exact (QueryResult's text).
std::string FormatCsv(const QueryResult& result);

nlohmann::ordered_json QueryResultToJson(const QueryResult& result);

// FormatTable with the last column whole (`memsweep query`), FormatCsv, or the JSON indented by
// 2 and ending with a newline.
std::string FormatQueryResult(const QueryResult& result, OutputFormat format);

}  // namespace memsweep::results
