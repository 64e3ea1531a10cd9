// `memsweep query [--db FILE] [--format table|csv|json] "SQL"`: runs one SQL statement on the
// results database, opened read-only, and prints its rows. Tables and the run_summary view:
// docs/results.md.
//
//   memsweep query "SELECT run_id, status, tokens_per_s FROM run_summary ORDER BY run_id"
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/cli/exit_code.h"

namespace memsweep::cli {

inline constexpr const char* kDefaultResultsDb = "results/memsweep.db";

struct QueryOptions {
  std::string db_path = kDefaultResultsDb;
  std::string format = "table";
  std::string sql;
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`
// (kOk printed, kInvalidInput bad SQL or no database).
void AddQueryCommand(CLI::App& app, QueryOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
