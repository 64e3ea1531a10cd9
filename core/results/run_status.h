// RunStatus: the life of one run row in the results database, stored as text in runs.status.
// pending (planned) -> running (claimed by a worker) -> ok | oom | failed | timeout.
//
//   db.FinishRun(run_id, RunStatus::kOom, "", &result_json);
//   std::optional<RunStatus> status = ParseRunStatus("timeout");
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace memsweep::results {

enum class RunStatus : uint8_t { kPending, kRunning, kOk, kOom, kFailed, kTimeout };

const char* RunStatusName(RunStatus status);  // "pending", "running", "ok", ...
std::optional<RunStatus> ParseRunStatus(std::string_view name);

}  // namespace memsweep::results
