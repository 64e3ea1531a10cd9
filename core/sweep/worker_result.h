// What the sweep runner takes from a worker's result file (docs/results.md, "A cell's result
// file"): the file as JSON, the status and error it states, and recording the outcome — where
// the database refuses a result's content (a malformed or corrupted file), only that cell fails,
// with the reason, and the sweep goes on.
//
//   std::optional<nlohmann::json> result = ReadWorkerResult(path);   // nullopt: none usable
//   const ResultStatus stated = StatusOfResult(*result);
//   RecordOutcome(db, run_id, stated.status, stated.error, &*result, nullptr);
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/results/results_db.h"
#include "core/results/run_status.h"

namespace memsweep::sweep {

// The result file as JSON; nullopt when it is missing, unreadable, not JSON or not an object.
std::optional<nlohmann::json> ReadWorkerResult(const std::string& path);

// The status a result states: "ok" and "oom" as such, anything else (missing, another word, not a
// string) failed; its error, "" unless a string.
struct ResultStatus {
  results::RunStatus status = results::RunStatus::kFailed;
  std::string error;
};
ResultStatus StatusOfResult(const nlohmann::json& result);

// result[section][key] when that is a string, else "".
std::string TextIn(const nlohmann::json& result, const char* section, const char* key);

// db.FinishRun with the result's figures and the estimate. Where the database refuses their
// content (ResultsError::Kind::kContent), the run is recorded failed, with why and without them.
// Every other database error propagates. Returns the status and error recorded.
ResultStatus RecordOutcome(results::ResultsDb& db, int64_t run_id, results::RunStatus status,
                           const std::string& error, const nlohmann::json* result,
                           const nlohmann::json* estimate);

}  // namespace memsweep::sweep
