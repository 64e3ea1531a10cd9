#include "core/cli/run_command.h"

#include <spdlog/spdlog.h>

#include <iostream>
#include <optional>

#include "core/config/run_config_loader.h"
#include "core/experiment/experiment_plan.h"
#include "core/memory/byte_size.h"
#include "core/report/run_report.h"
#include "core/train/trainer.h"

namespace memsweep::cli {
namespace {

// The cell --cell names, from the file's plan (every cell validated, as `memsweep plan` does).
experiment::Cell SelectCell(const RunOptions& options) {
  experiment::ExperimentPlan plan = experiment::LoadExperimentPlan(options.file, options.overrides);
  const int64_t count = static_cast<int64_t>(plan.cells.size());
  if (options.cell >= count) {
    throw config::ConfigError(options.file + ": --cell " + std::to_string(options.cell) +
                              " does not exist: the plan has " + std::to_string(count) +
                              " cells (0.." + std::to_string(count - 1) +
                              "); list them with `memsweep plan " + options.file + "`");
  }
  return std::move(plan.cells[options.cell]);
}

nlohmann::json CellToJson(const experiment::Cell& cell) {
  return {{"index", cell.index}, {"combination", cell.combination}, {"repeat", cell.repeat},
          {"seed", cell.seed},   {"hash", cell.hash},               {"params", cell.params}};
}

int Run(const RunOptions& options) {
  config::RunConfig cfg;
  std::optional<experiment::Cell> cell;
  try {
    if (options.cell >= 0) {
      cell = SelectCell(options);
      cfg = config::RunConfigFromTable(cell->document, cell->source);
    } else {
      cfg = config::LoadRunConfig(options.file, options.overrides);
    }
  } catch (const config::ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  if (cell) {
    spdlog::info("running '{}' {} from {}", cfg.experiment.name, cell->Describe(), options.file);
  } else {
    spdlog::info("running '{}' from {}", cfg.experiment.name, options.file);
  }
  train::Trainer trainer(cfg);
  if (!options.quiet) {
    trainer.OnStep([&cfg](const train::StepRecord& s) {
      spdlog::info("step {:>4}/{}  loss {:.4f}  {:>6} tokens  {:7.1f} ms  peak {}", s.step + 1,
                   cfg.experiment.steps, s.loss, s.tokens, s.seconds * 1e3,
                   memory::FormatBytes(s.peak_allocated_bytes));
    });
  }
  const train::RunResult result = trainer.Run();
  std::cout << report::FormatRunSummary(cfg, result);
  std::string json_path = options.json_path;
  if (json_path.empty()) {
    json_path = "results/" + cfg.experiment.name +
                (cell ? "-cell" + std::to_string(cell->index) : "") + ".json";
  }
  nlohmann::json json = report::RunResultToJson(cfg, result);
  if (cell) {
    json["cell"] = CellToJson(*cell);
    std::cout << "\n  " << cell->Describe() << ", hash " << cell->hash;
  }
  report::WriteJsonFile(json_path, json);
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
  run->add_option("--cell", options.cell, "Run this cell of the file's [matrix] (memsweep plan)")
      ->check(CLI::NonNegativeNumber);
  run->callback([&options, &exit_code] { exit_code = Run(options); });
}

}  // namespace memsweep::cli
