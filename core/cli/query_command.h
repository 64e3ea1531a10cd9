// `memsweep query [--db FILE] [--format table|csv|json] [--wide | --columns a,b,c] "SQL"`: runs
// one SQL statement on the results database, opened read-only, and prints its rows; the table
// format fits the terminal (table_width.h). Tables and the run_summary view: docs/results.md.
//
//   memsweep query "SELECT run_id, status, tokens_per_s FROM run_summary ORDER BY run_id"
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/cli/exit_code.h"
#include "core/cli/table_width.h"

namespace memsweep::cli {

inline constexpr const char* kDefaultResultsDb = "results/memsweep.db";

struct QueryOptions {
  std::string db_path = kDefaultResultsDb;
  std::string format = "table";
  std::string sql;
  TableWidthOptions width;
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`
// (kOk printed, kInvalidInput bad SQL, no database or an unknown column).
void AddQueryCommand(CLI::App& app, QueryOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
