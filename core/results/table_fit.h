// Fits a table for people into a terminal's width. FormatTable (output_format.h) prints every
// column however wide the lines get; FitTable prints the same table, unchanged when it fits, and
// otherwise
//   1. shortens long headers: a dotted key to its shortest ending that no other column's key
//      ends with (strategies.batching.micro_batch_size -> micro_batch_size), and the columns of
//      kHeaderAbbreviations to their short names (peak_allocated_bytes -> peak_alloc);
//   2. keeps the most important columns (the caller's order; empty columns last) that fit
//      together, leaving out the others;
//   3. wraps the last column's text at word boundaries to the width that is left.
// The caller then prints LeftOutNote, which names what was left out and how to see it.
//
//   FitOptions fit{.width = 100, .importance = {"cell", "status", "error"}};
//   const FittedTable table = FitTable(rows, fit);
//   std::cout << table.text << LeftOutNote(table, fit.width);
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/results/output_format.h"
#include "core/results/query_result.h"

namespace memsweep::results {

// Width for output that is not a terminal (and no COLUMNS says otherwise).
inline constexpr size_t kDefaultTableWidth = 100;
// The last column's text is wrapped to no less than this many columns: a column left fewer is
// left out instead.
inline constexpr size_t kMinWrapWidth = 24;

// Short headers, used when a table does not fit with its full ones (docs/results.md).
inline constexpr std::pair<std::string_view, std::string_view> kHeaderAbbreviations[] = {
    {"peak_allocated_bytes", "peak_alloc"},
    {"peak_allocated", "peak_alloc"},
    {"peak_allocated_ratio", "alloc_x"},
    {"peak_reserved_bytes", "peak_resv"},
    {"peak_reserved", "peak_resv"},
    {"peak_reserved_ratio", "resv_x"},
    {"estimated_peak_allocated_bytes", "est_peak_alloc"},
    {"estimate_error", "est_error"},
    {"activations_bytes", "activations"},
    {"activations_ratio", "act_x"},
    {"tokens_per_s", "tok/s"},
    {"tokens_per_s_ratio", "tok/s_x"},
    {"final_loss", "loss"},
    {"final_loss_delta", "loss_delta"},
    {"compute_dtype", "dtype"},
    {"max_abs_deviation", "max_abs_dev"},
    {"max_rel_deviation", "max_rel_dev"},
    {"max_deviation_step", "max_dev_step"},
    {"tolerance_rel", "tol_rel"},
    {"verdict_reason", "reason"},
};

struct FitOptions {
  size_t width = kDefaultTableWidth;
  // Column names, most important first; columns not named are less important than all named
  // ones, the rightmost least, and columns without a value in any row least of all. Ignored when
  // `columns` is given.
  std::vector<std::string> importance;
  // Exactly these columns, in this order (names as ResolveColumns accepts them): nothing is left
  // out, headers are still shortened and the last column wrapped when the table is too wide.
  std::vector<std::string> columns;
  // FormatTable's options for the table as it is (`uncut` names keep applying when it is fitted).
  TableOptions table;
};

struct FittedTable {
  std::string text;                   // the table's lines
  QueryResult shown;                  // what was printed: chosen columns, headers, wrapped text
  TableOptions options;               // what `shown` was printed with
  std::vector<std::string> left_out;  // columns not shown, in table order
};

// The table at `options.width` (above). Every line fits unless the chosen columns cannot (one
// column wider than the width, a column that is never cut, or `columns` too many).
FittedTable FitTable(const QueryResult& result, const FitOptions& options);

// "(2 columns left out to fit 100 columns: a, b; --wide shows every column, --columns a,b,c
// chooses them)\n", wrapped to `width`; "" when nothing was left out.
std::string LeftOutNote(const FittedTable& table, size_t width);

// The column names `requested` means, in its order: each an exact column name, else the one
// column whose short header (above) it is. Throws config::ConfigError (exit code 2) naming each
// unknown or ambiguous name and listing `available`; `table` names the table in that message
// ("the cells table").
std::vector<std::string> ResolveColumns(const std::vector<std::string>& requested,
                                        const std::vector<std::string>& available,
                                        const std::string& table = "the table");

// Only the named columns (exact names), in that order: --columns for CSV and JSON.
QueryResult SelectColumns(const QueryResult& result, const std::vector<std::string>& names);

// `text`'s lines wrapped at spaces to `width` display columns (a longer word is broken); a line
// that starts with two spaces (a command to copy) is kept whole.
std::string WrapText(const std::string& text, size_t width);

// The widest line of `text`, in display columns (UTF-8 code points).
size_t TextWidth(const std::string& text);

}  // namespace memsweep::results
