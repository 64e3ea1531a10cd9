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
  results::ComparisonFormat output{.format = format, .columns = options.width.columns};
  if (!options.table.empty()) {
    output.table = options.table == "effects" ? results::ComparisonTable::kEffects
                                              : results::ComparisonTable::kCells;
  }
  if (!options.width.wide) output.width = OutputColumns();
  std::cout << results::FormatComparison(results::Compare(db, compare), output);
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
                      "(default: the experiment's [experiment] reference cell when it has an ok "
                      "run, else the lowest cell index with status ok)");
  compare->add_option("--format", options.format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  compare
      ->add_option("--table", options.table,
                   "One table: cells or effects (default: both, but only cells with --format csv)")
      ->check(CLI::IsMember({"cells", "effects"}));
  AddTableWidthOptions(compare, options.width);
  AddCommand(compare, exit_code, [&options] { return Compare(options); });
}

}  // namespace memsweep::cli
