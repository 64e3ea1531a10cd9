#include "core/cli/estimate_command.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/cli/command.h"
#include "core/cli/count_text.h"
#include "core/cli/table_width.h"
#include "core/config/config_error.h"
#include "core/config/strategy_resolver.h"
#include "core/estimate/blas_workspaces.h"
#include "core/estimate/cell_estimate.h"
#include "core/estimate/isolated_estimate.h"
#include "core/experiment/experiment_plan.h"
#include "core/memory/byte_size.h"
#include "core/results/output_format.h"
#include "core/results/table_fit.h"

namespace memsweep::cli {
namespace {

using estimate::CellEstimate;
using estimate::EstimateStatus;

std::string Bytes(int64_t bytes) { return memory::FormatBytes(bytes); }

int64_t Int(const nlohmann::json& j, const char* key) { return j.value(key, int64_t{0}); }
std::string Str(const nlohmann::json& j, const char* key) { return j.value(key, std::string()); }
bool HasFigures(const nlohmann::json& j) { return j.contains("peak_allocated_bytes"); }

// "forward, step 1" / "model".
std::string PeakAt(const nlohmann::json& j) {
  const std::string stage = Str(j, "peak_stage");
  if (stage.empty()) return "-";
  const int64_t step = j.value("peak_step", int64_t{-1});
  return step >= 0 ? stage + ", step " + std::to_string(step) : stage;
}

// The largest single allocation: "1002.00 MiB logits (forward)".
std::string Largest(const nlohmann::json& j) {
  if (Int(j, "largest_allocation_bytes") <= 0) return "-";
  std::string text = Bytes(Int(j, "largest_allocation_bytes"));
  if (!Str(j, "largest_allocation_what").empty()) text += " " + Str(j, "largest_allocation_what");
  if (!Str(j, "largest_allocation_stage").empty()) text += " (" + Str(j, "largest_allocation_stage") + ")";
  return text;
}

// fits: the headroom the peak reserved bytes leave; oom, unsupported, failed: the message.
std::string Verdict(const nlohmann::json& j) {
  const std::string status = Str(j, "status");
  if (status == "fits") {
    std::string text = "headroom " + Bytes(Int(j, "headroom_bytes")) + " of " +
                       Bytes(Int(j, "budget_bytes")) + " (" + Str(j, "device") + ")";
    if (j.value("marginal", false)) {
      text += "; marginal: under 1 % of the card, a real allocator may run out";
    }
    return text;
  }
  if (status == "estimated") return "no device size (give --device NAME|SIZE)";
  if (status == "oom" && j.value("marginal", false)) {
    return Str(j, "message") + "; marginal: a card 1 % larger fits it, a real allocator may";
  }
  return Str(j, "message");
}

// A Markdown table (docs/full-size-estimates.md is made of these): one row per cell with its
// label, the peaks, where the peak falls, the largest allocation and the verdict.
std::string Markdown(const std::vector<nlohmann::json>& rows) {
  std::ostringstream out;
  out << "| cell | cell's values | status | peak allocated | peak reserved | peak at | largest "
         "allocation | verdict |\n|---|---|---|---|---|---|---|---|\n";
  const auto escape = [](std::string text) {
    for (size_t at = 0; (at = text.find_first_of("|\n", at)) != std::string::npos; at += 2) {
      text.replace(at, 1, text[at] == '|' ? "\\|" : "  ");
    }
    return text;
  };
  for (const nlohmann::json& j : rows) {
    const bool figures = HasFigures(j);
    const auto bytes = [&](const char* key) {
      return figures ? Bytes(Int(j, key)) + " (" + std::to_string(Int(j, key)) + ")" : std::string("-");
    };
    const std::string label = Str(j, "label");
    out << "| " << Int(j, "cell") << " | " << escape(label.empty() ? "-" : label) << " | "
        << Str(j, "status") << " | " << bytes("peak_allocated_bytes") << " | "
        << bytes("peak_reserved_bytes") << " | " << (figures ? PeakAt(j) : "-") << " | "
        << escape(figures ? Largest(j) : "-") << " | " << escape(Verdict(j)) << " |\n";
  }
  return out.str();
}

// The table's columns, most important first (what a fitted table keeps; docs/estimate.md).
const std::vector<std::string> kTableColumns = {
    "cell",        "status",         "peak_allocated", "peak_reserved", "verdict",
    "parameters",  "trainable",      "tokens/micro_batch", "tokens/step", "params",
    "grads",       "optimizer",      "activations",    "peak_at",       "largest_allocation"};

results::QueryResult TableRows(const std::vector<nlohmann::json>& rows) {
  results::QueryResult table;
  table.columns = kTableColumns;
  for (const nlohmann::json& j : rows) {
    const bool figures = HasFigures(j) && !j.value("oom_before_run", false);
    const auto bytes = [&](const char* key) -> std::optional<std::string> {
      if (!figures) return std::nullopt;
      return Bytes(Int(j, key));
    };
    const auto count = [&](const char* key) -> std::optional<std::string> {
      if (Int(j, key) <= 0) return std::nullopt;
      return GroupDigits(Int(j, key));
    };
    std::vector<std::optional<std::string>> values = {
        std::to_string(Int(j, "cell")),
        Str(j, "status"),
        bytes("peak_allocated_bytes"),
        bytes("peak_reserved_bytes"),
        Verdict(j),
        count("parameters"),
        count("trainable_params"),
        count("tokens_per_micro_batch"),
        count("tokens_per_step"),
        bytes("params_bytes"),
        bytes("grads_bytes"),
        bytes("optimizer_bytes"),
        bytes("activations_bytes"),
        figures ? std::optional<std::string>(PeakAt(j)) : std::nullopt,
        figures ? std::optional<std::string>(Largest(j)) : std::nullopt};
    std::vector<results::ValueKind> kinds(values.size(), results::ValueKind::kText);
    kinds[0] = results::ValueKind::kInteger;
    for (size_t c = 0; c < values.size(); ++c) {
      if (!values[c]) kinds[c] = results::ValueKind::kNull;
    }
    table.AddRow(std::move(values), std::move(kinds));
  }
  return table;
}

std::string Table(const std::vector<nlohmann::json>& rows, const TableWidthOptions& width) {
  std::ostringstream out;
  const results::QueryResult table = TableRows(rows);
  // The verdict says what the row means: never cut.
  const results::TableOptions table_options{.uncut = {"verdict"}};
  if (width.wide) {
    out << results::FormatTable(table, table_options);
  } else {
    const size_t columns = OutputColumns();
    const results::FitOptions fit{.width = columns,
                                  .importance = kTableColumns,
                                  .columns = width.columns,
                                  .table = table_options};
    const results::FittedTable fitted = results::FitTable(table, fit);
    out << fitted.text << results::LeftOutNote(fitted, columns);
  }
  out << "\n";
  for (const nlohmann::json& j : rows) {
    const std::string label = Str(j, "label");
    out << "cell " << Int(j, "cell") << ": " << (label.empty() ? "-" : label) << "  (" << Str(j, "target")
        << ", " << std::fixed << std::setprecision(2) << j.value("seconds", 0.0) << " s)\n";
    if (Int(j, "parameters") > 0) {
      out << "  " << GroupDigits(Int(j, "parameters")) << " parameters, "
          << GroupDigits(Int(j, "trainable_params")) << " trainable; "
          << GroupDigits(Int(j, "tokens_per_micro_batch")) << " tokens per micro-batch, "
          << GroupDigits(Int(j, "tokens_per_step")) << " per optimizer step\n";
    }
    // Several ranks: the figures above are rank 0's; each rank's peak, and the host pool's.
    if (j.contains("ranks")) {
      out << "  " << j["ranks"].size() << " ranks, peak allocated";
      for (const nlohmann::json& r : j["ranks"]) {
        out << (r.value("rank", 0) == 0 ? " " : " / ") << Bytes(r.value("peak_allocated_bytes", int64_t{0}))
            << (r.value("status", std::string("ok")) == "ok" ? "" : " (" + r.value("status", std::string()) + ")");
      }
      out << "\n";
    }
    if (Int(j, "host_pool_peak_bytes") > 0) {
      out << "  offloaded to host memory: " << Bytes(Int(j, "host_pool_peak_bytes")) << "\n";
    }
    for (const nlohmann::json& warning : j.value("warnings", nlohmann::json::array())) {
      // Wrapped to the terminal, indented under its cell.
      std::istringstream lines(results::WrapText("warning: " + warning.get<std::string>(),
                                                 OutputColumns() - 2));
      for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
    }
    if (j.value("host_short", false)) {
      out << "  host memory: the workers need about " << Bytes(Int(j, "host_bytes")) << ", "
          << Bytes(Int(j, "host_available_bytes"))
          << " is available here: the kernel's OOM killer would end a worker\n";
    }
  }
  return out.str();
}

// RFC 4180 quoting where a field needs it.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string Csv(const std::vector<nlohmann::json>& rows) {
  const std::vector<std::string> columns = {
      "cell", "label", "status", "device", "target", "budget_bytes", "peak_allocated_bytes",
      "peak_reserved_bytes", "params_bytes", "trainable_params_bytes", "frozen_params_bytes",
      "grads_bytes", "optimizer_bytes", "activations_bytes", "saved_activations_bytes",
      "peak_stage", "peak_step", "largest_allocation_bytes", "largest_allocation_what",
      "largest_allocation_stage", "blas_workspaces", "blas_workspace_bytes", "headroom_bytes",
      "marginal", "oom_requested_bytes", "oom_short_bytes", "oom_stage", "world_size",
      "host_pool_peak_bytes", "host_bytes", "host_available_bytes", "host_short", "message",
      "seconds", "parameters", "trainable_params", "seq_len", "tokens_per_micro_batch",
      "tokens_per_step", "row_length_mean", "row_length_max", "oom_before_run", "warnings"};
  std::ostringstream out;
  for (size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << columns[i];
  out << "\r\n";  // RFC 4180's line ends, as memsweep query writes them
  for (const nlohmann::json& j : rows) {
    for (size_t i = 0; i < columns.size(); ++i) {
      out << (i ? "," : "");
      if (!j.contains(columns[i])) continue;
      const nlohmann::json& v = j[columns[i]];
      if (v.is_array()) {  // warnings: one field, one per line
        std::string joined;
        for (const nlohmann::json& item : v) joined += (joined.empty() ? "" : "\n") + item.get<std::string>();
        out << CsvField(joined);
        continue;
      }
      out << (v.is_string() ? CsvField(v.get<std::string>()) : v.dump());
    }
    out << "\r\n";
  }
  return out.str();
}

ExitCode Estimate(const EstimateOptions& options) {
  results::ResolveColumns(options.width.columns, kTableColumns, "the estimate table");
  config::RefuseFailedStartupPlugins();
  CheckHostMemorySetting();
  estimate::EstimateTarget target;
  target.device = options.device;
  target.auto_device = options.auto_device;
  estimate::CheckTarget(target);
  if (!options.arch.empty()) {
    const std::optional<int> cc = estimate::ParseComputeCapability(options.arch);
    if (!cc) {
      throw config::ConfigError("--arch '" + options.arch +
                                "' is not a CUDA compute capability: give it as sm_86, 8.6 or 86");
    }
    target.compute_capability = *cc;
  }
  if (!options.source.empty()) {
    // A cell file as `memsweep worker` reads it (memsweep run's own use: EstimateExecuted).
    std::ifstream in(options.file);
    if (!in) throw config::ConfigError(options.file + ": cannot read the cell file");
    std::stringstream text;
    text << in.rdbuf();
    experiment::Cell cell = experiment::CellFromToml(text.str(), options.file);
    cell.source = options.source;
    estimate::CheckCell(cell, target);
    const nlohmann::json row = estimate::EstimateToJson(estimate::EstimateCell(cell, target));
    std::cout << (options.format == "row" ? estimate::EstimateRowLine(row) : row.dump(2) + "\n");
    return row.value("status", std::string()) == "failed" ? ExitCode::kRunFailed : ExitCode::kOk;
  }
  const experiment::ExperimentPlan plan = experiment::LoadExperimentPlan(
      options.file, options.overrides,
      [&target](const experiment::Cell& cell) { estimate::CheckCell(cell, target); });
  std::vector<nlohmann::json> rows;
  bool failed = false;
  for (const experiment::Cell& cell : plan.cells) {
    rows.push_back(estimate::EstimateIsolated(cell, target));
    failed = failed || rows.back().value("status", std::string()) == "failed";
  }
  if (options.format == "json") {
    std::cout << nlohmann::json{{"experiment", plan.name}, {"source", plan.source}, {"cells", rows}}
                     .dump(2)
              << "\n";
  } else if (options.format == "csv") {
    std::cout << Csv(rows);
  } else if (options.format == "markdown") {
    std::cout << Markdown(rows);
  } else if (options.format == "row") {
    for (const nlohmann::json& row : rows) std::cout << estimate::EstimateRowLine(row);
  } else {
    std::cout << "experiment  " << plan.name << "\nsource      " << plan.source
              << "\nestimated on the meta device (docs/estimate.md)\n\n"
              << Table(rows, options.width);
  }
  return failed ? ExitCode::kRunFailed : ExitCode::kOk;
}

}  // namespace

void AddEstimateCommand(CLI::App& app, EstimateOptions& options, ExitCode& exit_code) {
  CLI::App* command = app.add_subcommand(
      "estimate", "Estimate every cell's memory without training or allocating (docs/estimate.md)");
  command->add_option("file", options.file, "Experiment TOML file")->required();
  command->add_option("--set", options.overrides, "Override a key: section.key=value (repeatable)");
  command->add_option("--device", options.device,
                      "A GPU of the catalog (a10g, ...: docs/gpu-models.md) or a capacity "
                      "(\"24GiB\") to check every cell against");
  command->add_option("--arch", options.arch,
                      "Compute capability of the GPU that will run the cells (sm_90, 9.0): "
                      "sets the cuBLAS workspaces; default: the named card's");
  AddTableWidthOptions(command, options.width);
  command->add_option("--format", options.format, "table (default), csv, json or markdown")
      ->check(CLI::IsMember({"table", "csv", "json", "markdown", "row"}));
  // memsweep run's own use (a runner with threads estimates a cell in a new process): the file
  // is a cell file as `memsweep worker` reads it, its relative paths anchored at --source.
  command->add_option("--source", options.source, "")->group("");
  // memsweep run's own: the device an "auto" cell's worker took (cell_estimate.h).
  command->add_option("--auto-device", options.auto_device, "")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->group("");
  AddCommand(command, exit_code, [&options] { return Estimate(options); });
}

}  // namespace memsweep::cli
