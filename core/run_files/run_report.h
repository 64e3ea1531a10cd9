// Presenting a RunResult: the summary table printed after a run, and the JSON document written
// beside it (every figure of docs/metrics.md, per-step records and the memory timeline).
//
//   std::cout << FormatRunSummary(cfg, result);
//   WriteJsonFile("results/quickstart.json", RunResultToJson(cfg, result));
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/config/run_config.h"
#include "core/train/run_result.h"

namespace memsweep::run_files {

std::string FormatRunSummary(const config::RunConfig& cfg, const train::RunResult& result);
nlohmann::json RunResultToJson(const config::RunConfig& cfg, const train::RunResult& result);
nlohmann::json RunConfigToJson(const config::RunConfig& cfg);
// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: readers never
// see half a file, and a failure leaves nothing behind. The folder must exist. Throws
// std::runtime_error (or std::filesystem::filesystem_error) naming the path.
void WriteFileAtomically(const std::string& path, std::string_view bytes);
// The document, indented by 2, through WriteFileAtomically; creates the folder if needed.
void WriteJsonFile(const std::string& path, const nlohmann::json& document);

}  // namespace memsweep::run_files
