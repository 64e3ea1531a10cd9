#include "core/cli/query_command.h"

#include <iostream>
#include <string>
#include <vector>

#include "core/cli/command.h"
#include "core/results/output_format.h"
#include "core/results/results_db.h"
#include "core/results/table_fit.h"

namespace memsweep::cli {
namespace {

// The first column, then the last (shown whole: select a long text last to read it), then the
// others from the left: what a fitted table keeps.
std::vector<std::string> QueryColumnImportance(const results::QueryResult& result) {
  std::vector<std::string> order;
  if (result.columns.size() < 2) return result.columns;
  order = {result.columns.front(), result.columns.back()};
  order.insert(order.end(), result.columns.begin() + 1, result.columns.end() - 1);
  return order;
}

ExitCode Query(const QueryOptions& options) {
  const results::OutputFormat format =
      results::ParseOutputFormat(options.format).value_or(results::OutputFormat::kTable);
  results::ResultsDb db(options.db_path, results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult result = db.Query(options.sql);
  const std::vector<std::string> columns =
      options.width.columns.empty()
          ? std::vector<std::string>{}
          : results::ResolveColumns(options.width.columns, result.columns, "the query's result");
  if (format != results::OutputFormat::kTable) {
    std::cout << results::FormatQueryResult(
        columns.empty() ? result : results::SelectColumns(result, columns), format);
    return ExitCode::kOk;
  }
  const size_t width = options.width.wide ? 0 : OutputColumns();
  results::QueryResult shown = result;
  results::TableOptions table_options{.whole_last_column = true};
  if (width == 0) {
    std::cout << results::FormatTable(result, table_options);
  } else {
    const results::FitOptions fit{.width = width,
                                  .importance = QueryColumnImportance(result),
                                  .columns = columns,
                                  .table = table_options};
    const results::FittedTable fitted = results::FitTable(result, fit);
    std::cout << fitted.text << results::LeftOutNote(fitted, width);
    shown = fitted.shown;
    table_options = fitted.options;
  }
  const size_t rows = result.rows.size();
  std::string count = "(" + std::to_string(rows) + (rows == 1 ? " row" : " rows");
  const size_t cut = results::CutTableValues(shown, table_options);
  if (cut > 0) {
    count += "; " + std::to_string(cut) + (cut == 1 ? " value" : " values") +
             " cut at 60 characters: the last column is shown whole, --format csv or json shows "
             "every value whole";
  }
  count += ")";
  std::cout << (width == 0 ? count : results::WrapText(count, width)) << "\n";
  return ExitCode::kOk;
}

}  // namespace

void AddQueryCommand(CLI::App& app, QueryOptions& options, ExitCode& exit_code) {
  CLI::App* query = app.add_subcommand(
      "query", "Run one SQL statement on the results database (read-only) and print its rows");
  query->add_option("sql", options.sql, "SQL, e.g. \"SELECT * FROM run_summary\"")->required();
  query->add_option("--db", options.db_path, "Results database")->capture_default_str();
  query->add_option("--format", options.format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  AddTableWidthOptions(query, options.width);
  AddCommand(query, exit_code, [&options] { return Query(options); });
}

}  // namespace memsweep::cli
