#include "core/sweep/worker_result.h"

#include <fstream>

#include "core/results/results_error.h"

namespace memsweep::sweep {

std::optional<nlohmann::json> ReadWorkerResult(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json result = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!result.is_object()) return std::nullopt;  // not JSON (discarded) or not an object
  return result;
}

ResultStatus StatusOfResult(const nlohmann::json& result) {
  ResultStatus stated;
  const auto text = [&result](const char* key) -> std::string {
    const auto it = result.find(key);
    return it != result.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!result.is_object()) return stated;
  const std::string status = text("status");
  stated.status = status == "ok"    ? results::RunStatus::kOk
                  : status == "oom" ? results::RunStatus::kOom
                                    : results::RunStatus::kFailed;
  stated.error = text("error");
  return stated;
}

std::string TextIn(const nlohmann::json& result, const char* section, const char* key) {
  if (!result.is_object()) return "";
  const auto part = result.find(section);
  if (part == result.end() || !part->is_object()) return "";
  const auto value = part->find(key);
  return value != part->end() && value->is_string() ? value->get<std::string>() : "";
}

ResultStatus RecordOutcome(results::ResultsDb& db, int64_t run_id, results::RunStatus status,
                           const std::string& error, const nlohmann::json* result,
                           const nlohmann::json* estimate) {
  try {
    db.FinishRun(run_id, status, error, result, estimate);
    return {status, error};
  } catch (const results::ResultsError& e) {
    if (e.kind() != results::ResultsError::Kind::kContent) throw;
    // The transaction rolled back: record the cell without what the database refused.
    const ResultStatus recorded{
        results::RunStatus::kFailed,
        std::string("its result could not be stored (status ") + results::RunStatusName(status) +
            "): " + e.what() + (error.empty() ? "" : "\n" + error)};
    db.FinishRun(run_id, recorded.status, recorded.error, nullptr, nullptr);
    return recorded;
  }
}

}  // namespace memsweep::sweep
