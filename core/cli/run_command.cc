#include "core/cli/run_command.h"

#include <spdlog/spdlog.h>

#include <iostream>

#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/memory/byte_size.h"
#include "core/report/run_report.h"
#include "core/train/trainer.h"

namespace memsweep::cli {
namespace {

int Run(const RunOptions& options) {
  config::RunConfig cfg;
  try {
    cfg = config::LoadRunConfig(options.file, options.overrides);
  } catch (const config::ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  spdlog::info("running '{}' from {}", cfg.experiment.name, options.file);
  train::Trainer trainer(cfg, config::InstantiateStrategies(cfg));
  if (!options.quiet) {
    trainer.OnStep([&cfg](const train::StepRecord& s) {
      spdlog::info("step {:>4}/{}  loss {:.4f}  {:>6} tokens  {:7.1f} ms  peak {}", s.step + 1,
                   cfg.experiment.steps, s.loss, s.tokens, s.seconds * 1e3,
                   memory::FormatBytes(s.peak_allocated_bytes));
    });
  }
  const train::RunResult result = trainer.Run();
  std::cout << report::FormatRunSummary(cfg, result);
  const std::string json_path =
      options.json_path.empty() ? "results/" + cfg.experiment.name + ".json" : options.json_path;
  report::WriteJsonFile(json_path, report::RunResultToJson(cfg, result));
  std::cout << "\n  full result: " << json_path << "\n";
  return result.status == train::RunStatus::kFailed ? 1 : 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, RunOptions& options, int& exit_code) {
  CLI::App* run = app.add_subcommand("run", "Run one experiment file and print its figures");
  run->add_option("file", options.file, "Experiment TOML file")->required();
  run->add_option("--set", options.overrides, "Override a key: section.key=value (repeatable)");
  run->add_option("--json", options.json_path, "Where to write the JSON result");
  run->add_flag("-q,--quiet", options.quiet, "No per-step log lines");
  run->callback([&options, &exit_code] { exit_code = Run(options); });
}

}  // namespace memsweep::cli
