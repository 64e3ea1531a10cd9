#include "core/cli/compare_command.h"

#include <iostream>

#include "core/cli/command.h"
#include "core/results/compare.h"
#include "core/results/output_format.h"
#include "core/results/results_db.h"

namespace memsweep::cli {
namespace {

ExitCode Compare(const CompareCommandOptions& options) {
  const results::OutputFormat format =
      results::ParseOutputFormat(options.format).value_or(results::OutputFormat::kTable);
  results::ResultsDb db(options.db_path, results::ResultsDb::Mode::kReadOnly);
  results::CompareOptions compare;
  compare.experiment = options.experiment;
  compare.baseline = options.baseline;
  std::cout << results::FormatComparison(results::Compare(db, compare), format);
  return ExitCode::kOk;
}

}  // namespace

void AddCompareCommand(CLI::App& app, CompareCommandOptions& options, ExitCode& exit_code) {
  CLI::App* compare = app.add_subcommand(
      "compare",
      "Compare the cells of an experiment with a baseline cell, and each factor's effect");
  compare->add_option("--db", options.db_path, "Results database")->capture_default_str();
  compare->add_option("--experiment", options.experiment,
                      "Experiment name (default: the most recently created)");
  compare->add_option("--baseline", options.baseline,
                      "Baseline: a run id, or key=value[,key=value] naming one cell "
                      "(default: the lowest cell index with status ok)");
  compare->add_option("--format", options.format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  AddCommand(compare, exit_code, [&options] { return Compare(options); });
}

}  // namespace memsweep::cli
