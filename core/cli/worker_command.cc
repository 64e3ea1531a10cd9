#include "core/cli/worker_command.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/experiment/cell.h"
#include "core/report/run_report.h"
#include "core/train/trainer.h"

namespace memsweep::cli {
namespace {

int RunCell(const WorkerOptions& options) {
  config::RunConfig cfg;
  try {
    std::ifstream in(options.cell_path);
    if (!in) throw config::ConfigError(options.cell_path + ": cannot read the cell file");
    std::stringstream text;
    text << in.rdbuf();
    const experiment::Cell cell = experiment::CellFromToml(text.str(), options.cell_path);
    cfg = config::RunConfigFromTable(cell.document, options.source);
  } catch (const config::ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  train::RunResult result;
  try {
    train::Trainer trainer(cfg, config::InstantiateStrategies(cfg));
    trainer.OnStep([&cfg](const train::StepRecord& s) {
      const double tokens_per_s = s.seconds > 0 ? s.tokens / s.seconds : 0.0;
      std::printf("progress %lld %lld %.1f %lld\n", static_cast<long long>(s.step + 1),
                  static_cast<long long>(cfg.experiment.steps), tokens_per_s,
                  static_cast<long long>(s.peak_allocated_bytes));
      std::fflush(stdout);
    });
    result = trainer.Run();
  } catch (const std::exception& e) {
    result.status = train::RunStatus::kFailed;
    result.error = e.what();
  }
  if (!options.summary_path.empty()) {
    std::ofstream(options.summary_path) << report::FormatRunSummary(cfg, result);
  }
  report::WriteJsonFile(options.result_path, report::RunResultToJson(cfg, result));
  if (!result.error.empty()) std::cerr << result.error << "\n";
  return result.status == train::RunStatus::kFailed ? 1 : 0;
}

}  // namespace

void AddWorkerCommand(CLI::App& app, WorkerOptions& options, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("worker", "Run one experiment cell (used by the sweep runner)");
  cmd->group("");  // hidden from --help: an internal command
  cmd->add_option("--cell", options.cell_path, "The cell's resolved TOML")->required();
  cmd->add_option("--source", options.source, "The experiment file it came from")->required();
  cmd->add_option("--result", options.result_path, "Where to write the result JSON")->required();
  cmd->add_option("--summary", options.summary_path, "Where to write the summary table");
  cmd->callback([&options, &exit_code] { exit_code = RunCell(options); });
}

}  // namespace memsweep::cli
