// memsweep command line: one file per subcommand; this file only wires them up.
//
// Exit codes: ExitCode (core/cli/exit_code.h, the table in docs/cli.md). Every subcommand and
// this function run through RunCommand (core/cli/command.h), so no exception reaches
// std::terminate: input and results-database errors exit 2, anything unexpected 1.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/cli/calibrate_command.h"
#include "core/cli/command.h"
#include "core/cli/compare_command.h"
#include "core/cli/report_command.h"
#include "core/cli/estimate_command.h"
#include "core/cli/exit_code.h"
#include "core/cli/plan_command.h"
#include "core/cli/plugins_command.h"
#include "core/cli/query_command.h"
#include "core/cli/run_command.h"
#include "core/cli/snapshot_command.h"
#include "core/cli/worker_command.h"
#include "core/env/environment.h"
#include "core/memory/tracking_allocator.h"

int main(int argc, char** argv) {
  using memsweep::cli::ExitCode;
  // A file-size limit (ulimit -f) makes a write fail with an error that names the file (the
  // results database: exit 2, docs/cli.md) instead of killing memsweep with SIGXFSZ.
  signal(SIGXFSZ, SIG_IGN);
  return memsweep::cli::ToInt(memsweep::cli::RunCommand([argc, argv] {
    // Before any tensor exists, so that every allocation is counted.
    memsweep::memory::TrackingAllocator::Install();
    spdlog::set_default_logger(spdlog::stderr_color_mt("memsweep"));
    spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");

    CLI::App app{"memsweep: which memory strategies let an LLM training run fit, at what speed, "
                 "and do they change the loss"};
    app.require_subcommand(1);
    app.set_version_flag("--version", [] {
      return memsweep::env::VersionLine(memsweep::env::DescribeEnvironment()) + "\n" +
             memsweep::cli::KeptCalibrationsText();
    });
    ExitCode exit_code = ExitCode::kOk;
    memsweep::cli::RunOptions run_options;
    memsweep::cli::AddRunCommand(app, run_options, exit_code);
    memsweep::cli::PluginsOptions plugins_options;
    memsweep::cli::AddPluginsCommand(app, plugins_options, exit_code);
    memsweep::cli::WorkerOptions worker_options;
    memsweep::cli::AddWorkerCommand(app, worker_options, exit_code);
    memsweep::cli::PlanOptions plan_options;
    memsweep::cli::AddPlanCommand(app, plan_options, exit_code);
    memsweep::cli::EstimateOptions estimate_options;
    memsweep::cli::AddEstimateCommand(app, estimate_options, exit_code);
    memsweep::cli::QueryOptions query_options;
    memsweep::cli::AddQueryCommand(app, query_options, exit_code);
    memsweep::cli::CompareCommandOptions compare_options;
    memsweep::cli::AddCompareCommand(app, compare_options, exit_code);
    memsweep::cli::ReportOptions report_options;
    memsweep::cli::AddReportCommand(app, report_options, exit_code);
    memsweep::cli::SnapshotOptions snapshot_options;
    memsweep::cli::AddSnapshotCommand(app, snapshot_options, exit_code);
    memsweep::cli::CalibrateOptions calibrate_options;
    memsweep::cli::AddCalibrateCommand(app, calibrate_options, exit_code);
    if (memsweep::cli::RefuseUnknownCommand(app, argc, argv)) return ExitCode::kInvalidInput;
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --version are "errors" with code 0.
      return app.exit(e) == 0 ? ExitCode::kOk : ExitCode::kInvalidInput;
    }
    return exit_code;
  }));
}
