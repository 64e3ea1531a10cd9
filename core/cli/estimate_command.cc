#include "core/cli/estimate_command.h"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/cli/command.h"
#include "core/config/config_error.h"
#include "core/config/strategy_resolver.h"
#include "core/estimate/cell_estimate.h"
#include "core/experiment/experiment_plan.h"
#include "core/memory/byte_size.h"

namespace memsweep::cli {
namespace {

using estimate::CellEstimate;
using estimate::EstimateStatus;

std::string Bytes(int64_t bytes) { return memory::FormatBytes(bytes); }

// "forward, step 1" / "model".
std::string PeakAt(const CellEstimate& e) {
  if (e.peak_stage.empty()) return "-";
  return e.peak_step >= 0 ? e.peak_stage + ", step " + std::to_string(e.peak_step) : e.peak_stage;
}

// The largest single allocation: "1002.00 MiB logits (forward)".
std::string Largest(const CellEstimate& e) {
  const train::MemoryBreakdown& m = e.run.memory;
  if (m.largest_allocation_bytes <= 0) return "-";
  std::string text = Bytes(m.largest_allocation_bytes);
  if (!m.largest_allocation_what.empty()) text += " " + m.largest_allocation_what;
  if (!m.largest_allocation_stage.empty()) text += " (" + m.largest_allocation_stage + ")";
  return text;
}

// fits: the headroom the peak reserved bytes leave; oom, unsupported, failed: the message.
std::string Verdict(const CellEstimate& e) {
  switch (e.status) {
    case EstimateStatus::kFits:
      return "headroom " + Bytes(e.budget_bytes - e.run.memory.peak_reserved_bytes) + " of " +
             Bytes(e.budget_bytes) + " (" + e.device + ")";
    case EstimateStatus::kEstimated:
      return "no device size (give --device NAME|SIZE)";
    default:
      return e.message;
  }
}

bool HasFigures(const CellEstimate& e) {
  return e.status == EstimateStatus::kEstimated || e.status == EstimateStatus::kFits ||
         e.status == EstimateStatus::kOom;
}

std::string Table(const std::vector<CellEstimate>& estimates) {
  std::ostringstream out;
  out << std::left << std::setw(5) << "cell" << "  " << std::setw(11) << "status" << "  "
      << std::setw(12) << "peak alloc" << "  " << std::setw(12) << "peak reserv" << "  "
      << std::setw(12) << "params" << "  " << std::setw(12) << "grads" << "  " << std::setw(12)
      << "optimizer" << "  " << std::setw(12) << "activations" << "  " << std::setw(18)
      << "peak at" << "  " << std::setw(34) << "largest allocation" << "  verdict\n";
  for (const CellEstimate& e : estimates) {
    const train::MemoryBreakdown& m = e.run.memory;
    const bool figures = HasFigures(e);
    const auto cell = [&](int64_t bytes) { return figures ? Bytes(bytes) : std::string("-"); };
    out << std::left << std::setw(5) << e.cell_index << "  " << std::setw(11)
        << estimate::EstimateStatusName(e.status) << "  " << std::setw(12)
        << cell(m.peak_allocated_bytes) << "  " << std::setw(12) << cell(m.peak_reserved_bytes)
        << "  " << std::setw(12) << cell(m.params_bytes) << "  " << std::setw(12)
        << cell(m.grads_bytes) << "  " << std::setw(12) << cell(m.optimizer_bytes) << "  "
        << std::setw(12) << cell(m.activations_bytes) << "  " << std::setw(18)
        << (figures ? PeakAt(e) : "-") << "  " << std::setw(34) << (figures ? Largest(e) : "-")
        << "  " << Verdict(e) << "\n";
  }
  out << "\n";
  for (const CellEstimate& e : estimates) {
    out << "cell " << e.cell_index << ": " << (e.label.empty() ? "-" : e.label) << "  ("
        << std::fixed << std::setprecision(2) << e.seconds << " s)\n";
  }
  return out.str();
}

nlohmann::json Json(const CellEstimate& e) {
  const train::MemoryBreakdown& m = e.run.memory;
  nlohmann::json j = {{"cell", e.cell_index},
                      {"label", e.label},
                      {"status", estimate::EstimateStatusName(e.status)},
                      {"message", e.message},
                      {"device", e.device},
                      {"target", e.target},
                      {"budget_bytes", e.budget_bytes},
                      {"seconds", e.seconds}};
  if (!HasFigures(e)) return j;
  j["peak_allocated_bytes"] = m.peak_allocated_bytes;
  j["peak_reserved_bytes"] = m.peak_reserved_bytes;
  j["params_bytes"] = m.params_bytes;
  j["trainable_params_bytes"] = m.trainable_params_bytes;
  j["frozen_params_bytes"] = m.frozen_params_bytes;
  j["grads_bytes"] = m.grads_bytes;
  j["optimizer_bytes"] = m.optimizer_bytes;
  j["activations_bytes"] = m.activations_bytes;
  j["saved_activations_bytes"] = m.saved_activations_bytes;
  j["peak_stage"] = e.peak_stage;
  j["peak_step"] = e.peak_step;
  j["largest_allocation_bytes"] = m.largest_allocation_bytes;
  j["largest_allocation_what"] = m.largest_allocation_what;
  j["largest_allocation_stage"] = m.largest_allocation_stage;
  if (e.status == EstimateStatus::kFits) {
    j["headroom_bytes"] = e.budget_bytes - m.peak_reserved_bytes;
  }
  if (e.run.oom) {
    j["oom_requested_bytes"] = e.run.oom->requested_bytes;
    j["oom_stage"] = e.run.oom->stage;
  }
  return j;
}

// RFC 4180 quoting where a field needs it.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string Csv(const std::vector<CellEstimate>& estimates) {
  const std::vector<std::string> columns = {
      "cell", "label", "status", "device", "target", "budget_bytes", "peak_allocated_bytes",
      "peak_reserved_bytes", "params_bytes", "trainable_params_bytes", "frozen_params_bytes",
      "grads_bytes", "optimizer_bytes", "activations_bytes", "saved_activations_bytes",
      "peak_stage", "peak_step", "largest_allocation_bytes", "largest_allocation_what",
      "largest_allocation_stage", "headroom_bytes", "oom_requested_bytes", "oom_stage", "message",
      "seconds"};
  std::ostringstream out;
  for (size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << columns[i];
  out << "\r\n";  // RFC 4180's line ends, as memsweep query writes them
  for (const CellEstimate& e : estimates) {
    const nlohmann::json j = Json(e);
    for (size_t i = 0; i < columns.size(); ++i) {
      out << (i ? "," : "");
      if (!j.contains(columns[i])) continue;
      const nlohmann::json& v = j[columns[i]];
      out << (v.is_string() ? CsvField(v.get<std::string>()) : v.dump());
    }
    out << "\r\n";
  }
  return out.str();
}

ExitCode Estimate(const EstimateOptions& options) {
  config::RefuseFailedStartupPlugins();
  estimate::EstimateTarget target;
  target.device = options.device;
  estimate::CheckTarget(target);
  const experiment::ExperimentPlan plan = experiment::LoadExperimentPlan(
      options.file, options.overrides,
      [&target](const experiment::Cell& cell) { estimate::CheckCell(cell, target); });
  std::vector<CellEstimate> estimates;
  bool failed = false;
  for (const experiment::Cell& cell : plan.cells) {
    estimates.push_back(estimate::EstimateCell(cell, target));
    failed = failed || estimates.back().status == EstimateStatus::kFailed;
  }
  if (options.format == "json") {
    nlohmann::json all = nlohmann::json::array();
    for (const CellEstimate& e : estimates) all.push_back(Json(e));
    std::cout << nlohmann::json{{"experiment", plan.name}, {"source", plan.source}, {"cells", all}}
                     .dump(2)
              << "\n";
  } else if (options.format == "csv") {
    std::cout << Csv(estimates);
  } else {
    std::cout << "experiment  " << plan.name << "\nsource      " << plan.source
              << "\nestimated on the meta device (docs/estimate.md)\n\n"
              << Table(estimates);
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
  command->add_option("--format", options.format, "table (default), csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  AddCommand(command, exit_code, [&options] { return Estimate(options); });
}

}  // namespace memsweep::cli
