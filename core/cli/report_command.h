// `memsweep report [--db FILE] [--experiment NAME|ID ...] [-o FILE]`: the results database as one
// self-contained HTML page — cells, memory breakdowns, timelines, throughput against memory, loss
// curves, factor effects, ranks, an ablation's waterfall (core/page/, docs/report.md).
//
//   memsweep report --experiment quickstart -o results/report.html
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/cli/exit_code.h"
#include "core/cli/query_command.h"

namespace memsweep::cli {

struct ReportOptions {
  std::string db_path = kDefaultResultsDb;
  std::vector<std::string> experiments;  // empty = every experiment (the latest of each name)
  std::string output;                    // "" = report.html beside the database
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code` (kOk written;
// kInvalidInput no database or a newer one, an unknown experiment, an output that cannot be
// written — then nothing is written).
void AddReportCommand(CLI::App& app, ReportOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
