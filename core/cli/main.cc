// memsweep command line: one file per subcommand; this file only wires them up.
//
// Exit codes (docs/cli.md): 0 the run completed (an OOM against the budget is a result) or the
// query / comparison was printed, 1 the run failed, 2 invalid input.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/cli/calibrate_command.h"
#include "core/cli/plugins_command.h"
#include "core/cli/plan_command.h"
#include "core/cli/compare_command.h"
#include "core/cli/query_command.h"
#include "core/cli/run_command.h"
#include "core/cli/worker_command.h"
#include "core/env/environment.h"
#include "core/memory/tracking_allocator.h"

int main(int argc, char** argv) {
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
  int exit_code = 0;
  memsweep::cli::RunOptions run_options;
  memsweep::cli::AddRunCommand(app, run_options, exit_code);
  memsweep::cli::PluginsOptions plugins_options;
  memsweep::cli::AddPluginsCommand(app, plugins_options, exit_code);
  memsweep::cli::WorkerOptions worker_options;
  memsweep::cli::AddWorkerCommand(app, worker_options, exit_code);
  memsweep::cli::PlanOptions plan_options;
  memsweep::cli::AddPlanCommand(app, plan_options, exit_code);
  memsweep::cli::QueryOptions query_options;
  memsweep::cli::AddQueryCommand(app, query_options, exit_code);
  memsweep::cli::CompareCommandOptions compare_options;
  memsweep::cli::AddCompareCommand(app, compare_options, exit_code);
  memsweep::cli::CalibrateOptions calibrate_options;
  memsweep::cli::AddCalibrateCommand(app, calibrate_options, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}
