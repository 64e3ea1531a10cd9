// Presenting a RunResult: the summary table printed after a run, and the JSON document written
// beside it (every figure of docs/metrics.md, per-step records and the memory timeline).
//
//   std::cout << FormatRunSummary(cfg, result);
//   WriteJsonFile("results/quickstart.json", RunResultToJson(cfg, result));
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/config/run_config.h"
#include "core/train/run_result.h"

namespace memsweep::report {

std::string FormatRunSummary(const config::RunConfig& cfg, const train::RunResult& result);
nlohmann::json RunResultToJson(const config::RunConfig& cfg, const train::RunResult& result);
nlohmann::json RunConfigToJson(const config::RunConfig& cfg);
// Writes to a temporary file beside `path`, then renames it: readers never see half a file.
void WriteJsonFile(const std::string& path, const nlohmann::json& document);

}  // namespace memsweep::report
