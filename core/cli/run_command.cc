#include "core/cli/run_command.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/cli/command.h"
#include "core/config/config_error.h"
#include "core/config/strategy_resolver.h"
#include "core/experiment/cell.h"
#include "core/experiment/data_check.h"
#include "core/experiment/experiment_plan.h"
#include "core/results/output_format.h"
#include "core/results/results_db.h"
#include "core/results/table_fit.h"
#include "core/cli/table_width.h"
#include "core/cli/worker_command.h"
#include "core/sweep/sweep_runner.h"

namespace memsweep::cli {
namespace {

std::atomic<bool> g_stop{false};

void RequestStop(int) { g_stop.store(true); }

// Ctrl-C / SIGTERM: finish cleanly (kill the worker, release its cell) instead of dying.
void InstallStopHandlers() {
  struct sigaction action {};
  action.sa_handler = RequestStop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// The params column as "memory_budget=24MiB micro_batch_size=2" or "checkpointing=none
// precision=fp32": each key by its shortest unambiguous ending (experiment::ShortParamNames), the
// same in every row, values as experiment::ParamText writes them.
results::QueryResult WithShortParams(results::QueryResult rows) {
  std::vector<nlohmann::json> params(rows.rows.size());
  std::vector<std::string> keys;
  for (size_t r = 0; r < rows.rows.size(); ++r) {
    if (!rows.rows[r][3]) continue;
    params[r] = nlohmann::json::parse(*rows.rows[r][3], nullptr, false);
    if (!params[r].is_object()) continue;
    for (const auto& [key, value] : params[r].items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  const std::map<std::string, std::string> names = experiment::ShortParamNames(keys);
  for (size_t r = 0; r < rows.rows.size(); ++r) {
    if (!params[r].is_object()) continue;
    std::string label;
    for (const auto& [key, value] : params[r].items()) {
      label += (label.empty() ? "" : " ") + names.at(key) + "=" + experiment::ParamText(value);
    }
    rows.rows[r][3] = label;
  }
  return rows;
}

// ResultsDb::CellOutcomes' columns, most important first: what a fitted summary keeps.
const std::vector<std::string> kCellOutcomeImportance = {
    "cell",       "status", "params",  "peak_allocated", "tokens_per_s",
    "final_loss", "error",  "verdict", "peak_reserved",  "repeat"};

void PrintCells(const std::string& db_path, int64_t experiment_id,
                const TableWidthOptions& width_options) {
  results::ResultsDb db(db_path, results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult rows = WithShortParams(db.CellOutcomes(experiment_id));
  // The params say which cell a row is: never cut.
  const results::TableOptions table_options{.uncut = {"params"}};
  // --wide: every column, no line wrapped (width 0).
  const size_t width = width_options.wide ? 0 : OutputColumns();
  bool left_out = false;
  if (width_options.wide) {
    std::cout << results::FormatTable(rows, table_options);
  } else {
    const results::FitOptions fit{.width = width,
                                  .importance = kCellOutcomeImportance,
                                  .columns = width_options.columns,
                                  .table = table_options};
    const results::FittedTable fitted = results::FitTable(rows, fit);
    std::cout << fitted.text << results::LeftOutNote(fitted, width);
    left_out =
        std::find(fitted.left_out.begin(), fitted.left_out.end(), "error") != fitted.left_out.end();
  }
  // A cell that did not finish says why under the table, the first line of its error whole
  // (wrapped to the width), when the error column did not fit or had to cut it.
  const results::QueryResult errors = db.Query(
      "SELECT cell_index, error FROM run_summary WHERE run_id IN "
      "(SELECT id FROM runs WHERE experiment_id = ?1) ORDER BY cell_index, repeat",
      {std::to_string(experiment_id)});
  const auto index = [&rows](const std::string& name) {
    return static_cast<size_t>(std::find(rows.columns.begin(), rows.columns.end(), name) -
                               rows.columns.begin());
  };
  const size_t shown = index("error");
  for (size_t r = 0; r < errors.rows.size(); ++r) {
    const std::optional<std::string>& error = errors.rows[r][1];
    if (!error || error->empty()) continue;
    const std::string first_line = error->substr(0, error->find('\n'));
    // The column holds the error's first characters, its lines joined.
    const bool whole = r < rows.rows.size() && rows.rows[r][shown] &&
                       rows.rows[r][shown]->size() >= first_line.size();
    if (!left_out && whole) continue;
    const std::string text = "cell " + errors.rows[r][0].value_or("?") + ": " + first_line;
    std::string line = width == 0 ? text : results::WrapText(text, width);
    if (line.empty() || line.back() != '\n') line += '\n';
    std::cout << line;
  }
}

ExitCode RunExperiment(const RunOptions& options) {
  sweep::SweepOptions sweep_options;
  if (options.rerun == "failed") {
    sweep_options.rerun = sweep::Rerun::kFailed;
  } else if (options.rerun == "all") {
    sweep_options.rerun = sweep::Rerun::kAll;
  } else if (options.rerun != "none") {
    throw config::ConfigError("--rerun " + options.rerun + ": expected failed or all");
  }
  // Every cell is validated, and every data source read once, before anything runs or the
  // database is touched.
  results::ResolveColumns(options.width.columns, kCellOutcomeImportance, "the summary table");
  config::RefuseFailedStartupPlugins();
  CheckHostMemorySetting();
  const experiment::ExperimentPlan plan =
      experiment::LoadRunnablePlan(options.file, options.overrides);
  sweep_options.db_path = options.db_path;
  sweep_options.cell_timeout_seconds = options.cell_timeout_seconds;
  sweep_options.progress_line = isatty(STDERR_FILENO) != 0;
  sweep_options.stop = &g_stop;
  sweep_options.estimate = !options.no_estimate;
  if (!options.exec_workers) {
    // The same path as `memsweep worker`: its exceptions become its exit code.
    sweep_options.in_process_worker = [](const sweep::WorkerFiles& files) {
      return ToInt(RunCommand([&files] { return RunWorker(files); }));
    };
  }
  InstallStopHandlers();
  spdlog::info("experiment '{}': {} cells, results in {}", plan.name, plan.cells.size(),
               options.db_path);
  const sweep::SweepSummary summary = sweep::RunSweep(plan, sweep_options);
  PrintCells(options.db_path, summary.experiment_id, options.width);
  std::cout << "\n" << summary.cells << " cells: " << summary.ok << " ok, " << summary.oom
            << " oom, " << summary.failed << " failed, " << summary.timeout << " timed out, "
            << summary.skipped << " already done" << (summary.interrupted ? " (interrupted)" : "")
            << "\nper-cell results and summaries: "
            << sweep::CellFilesDirectory(options.db_path, plan.name).string() << "/\n";
  if (summary.interrupted) return ExitCode::kInterrupted;
  return summary.failed + summary.timeout > 0 ? ExitCode::kRunFailed : ExitCode::kOk;
}

}  // namespace

void AddRunCommand(CLI::App& app, RunOptions& options, ExitCode& exit_code) {
  CLI::App* run = app.add_subcommand("run", "Run an experiment: every cell of its matrix");
  run->add_option("file", options.file, "Experiment TOML file")->required();
  run->add_option("--set", options.overrides, "Override a key: section.key=value (repeatable)");
  run->add_option("--db", options.db_path, "Results database (default results/memsweep.db)");
  run->add_option("--rerun", options.rerun,
                  "Run finished cells again: failed (failed and timed-out cells) or all");
  run->add_option("--cell-timeout", options.cell_timeout_seconds,
                  "Seconds a cell may run before it is killed and recorded as timeout");
  run->add_flag("--exec-workers", options.exec_workers,
                "Start every cell as a new memsweep process (default: CPU cells start as a fork "
                "of the runner, which skips loading LibTorch again)");
  run->add_flag("--no-estimate", options.no_estimate,
                "Do not estimate each cell beside its measurement (run_summary's estimated_* "
                "columns; docs/estimate.md)");
  AddTableWidthOptions(run, options.width);
  AddCommand(run, exit_code, [&options] { return RunExperiment(options); });
}

}  // namespace memsweep::cli
