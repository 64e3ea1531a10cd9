#include "core/results/run_status.h"

namespace memsweep::results {
namespace {

constexpr RunStatus kAllStatuses[] = {RunStatus::kPending, RunStatus::kRunning,
                                      RunStatus::kOk,      RunStatus::kOom,
                                      RunStatus::kFailed,  RunStatus::kTimeout};

}  // namespace

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kPending: return "pending";
    case RunStatus::kRunning: return "running";
    case RunStatus::kOk: return "ok";
    case RunStatus::kOom: return "oom";
    case RunStatus::kFailed: return "failed";
    case RunStatus::kTimeout: return "timeout";
  }
  return "failed";
}

std::optional<RunStatus> ParseRunStatus(std::string_view name) {
  for (RunStatus status : kAllStatuses) {
    if (name == RunStatusName(status)) return status;
  }
  return std::nullopt;
}

}  // namespace memsweep::results
