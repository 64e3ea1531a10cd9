#include "core/cli/report_command.h"

#include <filesystem>
#include <iostream>

#include "core/cli/command.h"
#include "core/page/html_report.h"
#include "core/page/report_data.h"
#include "core/results/results_db.h"

namespace memsweep::cli {
namespace {

std::string DefaultOutput(const std::string& db_path) {
  const std::filesystem::path db(db_path);
  return (db.has_parent_path() ? db.parent_path() / "report.html" : "report.html").string();
}

ExitCode Report(const ReportOptions& options) {
  results::ResultsDb db(options.db_path, results::ResultsDb::Mode::kReadOnly);
  const std::vector<page::ExperimentReport> experiments =
      page::LoadReports(db, options.experiments);
  const std::string output = options.output.empty() ? DefaultOutput(options.db_path) : options.output;
  try {
    page::WriteReport(page::HtmlReport(experiments, {.db_path = options.db_path}), output);
  } catch (const page::ReportWriteError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return ExitCode::kInvalidInput;
  }
  std::cout << "report: " << output << " (" << experiments.size()
            << (experiments.size() == 1 ? " experiment" : " experiments")
            << "; open it in a browser, it needs nothing else)\n";
  return ExitCode::kOk;
}

}  // namespace

void AddReportCommand(CLI::App& app, ReportOptions& options, ExitCode& exit_code) {
  CLI::App* report = app.add_subcommand(
      "report", "Write the results as one self-contained HTML page with charts");
  report->add_option("--db", options.db_path, "Results database")->capture_default_str();
  report->add_option("--experiment", options.experiments,
                     "Experiment name or id (repeatable; default: every experiment, the latest "
                     "of each name)");
  report->add_option("-o,--output", options.output,
                     "The page to write (default: report.html beside the database)");
  AddCommand(report, exit_code, [&options] { return Report(options); });
}

}  // namespace memsweep::cli
