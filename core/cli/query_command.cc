#include "core/cli/query_command.h"

#include <iostream>

#include "core/cli/command.h"
#include "core/results/output_format.h"
#include "core/results/results_db.h"

namespace memsweep::cli {
namespace {

ExitCode Query(const QueryOptions& options) {
  const results::OutputFormat format =
      results::ParseOutputFormat(options.format).value_or(results::OutputFormat::kTable);
  results::ResultsDb db(options.db_path, results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult result = db.Query(options.sql);
  std::cout << results::FormatQueryResult(result, format);
  if (format == results::OutputFormat::kTable) {
    const size_t rows = result.rows.size();
    std::cout << "(" << rows << (rows == 1 ? " row" : " rows");
    const size_t cut = results::CutTableValues(result, {.whole_last_column = true});
    if (cut > 0) {
      std::cout << "; " << cut << (cut == 1 ? " value" : " values")
                << " cut at 60 characters: the last column is shown whole, --format csv or "
                   "json shows every value whole";
    }
    std::cout << ")\n";
  }
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
  AddCommand(query, exit_code, [&options] { return Query(options); });
}

}  // namespace memsweep::cli
