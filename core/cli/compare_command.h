// `memsweep compare [--db FILE] [--experiment NAME] [--baseline RUN_ID | key=value[,...]]
// [--format table|csv|json] [--table cells|effects] [--wide | --columns a,b,c]`: each cell of an
// experiment against a baseline cell, then the main effect of each matrix key that varies; the
// table format fits the terminal (table_width.h). Definitions: docs/results.md.
//
//   memsweep compare --experiment ablation --baseline strategies.batching.micro_batch_size=8
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/cli/exit_code.h"
#include "core/cli/query_command.h"
#include "core/cli/table_width.h"

namespace memsweep::cli {

struct CompareCommandOptions {
  std::string db_path = kDefaultResultsDb;
  std::string experiment;  // "" = the most recently created one
  std::string baseline;    // "" = the lowest cell_index with status ok
  std::string format = "table";
  std::string table;  // "" (table, JSON: both; CSV: cells), "cells" or "effects"
  TableWidthOptions width;
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`
// (kOk printed; kInvalidInput no database, unknown experiment, baseline or column, nothing to
// compare).
void AddCompareCommand(CLI::App& app, CompareCommandOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
