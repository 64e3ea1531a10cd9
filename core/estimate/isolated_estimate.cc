#include "core/estimate/isolated_estimate.h"

#include <functional>

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/process/child_process.h"

namespace memsweep::estimate {

nlohmann::json EstimateToJson(const CellEstimate& e) {
  const train::MemoryBreakdown& m = e.run.memory;
  nlohmann::json j = {{"cell", e.cell_index},
                      {"label", e.label},
                      {"status", estimate::EstimateStatusName(e.status)},
                      {"message", e.message},
                      {"device", e.device},
                      {"target", e.target},
                      {"budget_bytes", e.budget_bytes},
                      {"seconds", e.seconds}};
  if (e.parameters > 0) {
    j["parameters"] = e.parameters;
    j["trainable_params"] = e.trainable_params;
    j["seq_len"] = e.seq_len;
    j["tokens_per_micro_batch"] = e.tokens_per_micro_batch;
    j["tokens_per_step"] = e.tokens_per_step;
  }
  if (!e.warnings.empty()) j["warnings"] = e.warnings;
  if (e.oom_before_run) j["oom_before_run"] = true;
  if ((e.status != EstimateStatus::kEstimated && e.status != EstimateStatus::kFits &&
       e.status != EstimateStatus::kOom) ||
      e.oom_before_run) {
    return j;
  }
  if (e.run.summary.row_length_max > 0) {  // 0: no step completed
    j["row_length_mean"] = e.run.summary.row_length_mean;
    j["row_length_max"] = e.run.summary.row_length_max;
  }
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
  if (e.target == "cuda") {
    j["blas_workspaces"] = e.blas_workspaces;
    j["blas_workspace_bytes"] = e.blas_workspace_bytes;
  }
  // The verdict is the rank that needs the most (rank 0's figures above, as a run stores them).
  int64_t reserved = m.peak_reserved_bytes;
  if (e.world_size > 1) {
    j["world_size"] = e.world_size;
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankEstimate& r : e.ranks) {
      reserved = std::max(reserved, r.peak_reserved_bytes);
      ranks.push_back({{"rank", r.rank},
                       {"status", train::RunStatusName(r.status)},
                       {"error", r.message},
                       {"peak_allocated_bytes", r.peak_allocated_bytes},
                       {"peak_reserved_bytes", r.peak_reserved_bytes},
                       {"host_pool_peak_bytes", r.host_pool_peak_bytes}});
    }
    j["ranks"] = ranks;
  }
  j["host_pool_peak_bytes"] = e.host_pool_peak_bytes;
  j["host_bytes"] = e.host_bytes;
  j["host_available_bytes"] = e.host_available_bytes;
  // More host memory than this machine has free: the kernel's OOM killer would end a worker.
  j["host_short"] = e.host_available_bytes > 0 && e.host_bytes > e.host_available_bytes;
  if (e.status == EstimateStatus::kFits) {
    j["headroom_bytes"] = e.budget_bytes - reserved;
    // Within the estimate's error on reserved bytes against a real caching allocator (under 1 %
    // on the H200, docs/estimate.md): the real allocator's block choice decides.
    j["marginal"] = (e.budget_bytes - reserved) * 100 < e.budget_bytes;
  }
  if (e.run.oom) {
    j["oom_requested_bytes"] = e.run.oom->requested_bytes;
    j["oom_stage"] = e.run.oom->stage;
    if (e.status == EstimateStatus::kOom) {
      j["oom_short_bytes"] = e.run.oom->short_bytes;  // the failing request's shortfall
      j["marginal"] = e.marginal_oom;                 // a card 1 % larger fits the whole run
    }
  }
  return j;
}

namespace {

constexpr const char* kMarker = "memsweep-estimate-row ";

nlohmann::json FailedRow(const experiment::Cell& cell, const std::string& message) {
  return {{"cell", cell.index}, {"label", cell.Label()}, {"status", "failed"}, {"message", message}};
}

// The row a child writes after kMarker on its stdout: read until the child closes its end, or
// until the deadline (a plugin's hook that hangs in the real run hangs in the estimate too, and
// the child is then killed); a child that ends without a row gives a failed one saying how.
nlohmann::json ReadRow(process::ChildProcess& child, const experiment::Cell& cell,
                       double timeout_seconds, const std::function<bool()>& stop) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_seconds > 0 ? timeout_seconds : 1e9);
  std::string output;
  char buffer[65536];
  for (;;) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (stop && stop()) {
      child.Kill();
      return FailedRow(cell, "the estimate was interrupted");
    }
    if (left <= 0) {
      child.Kill();
      return FailedRow(cell, "the estimate did not end within " +
                                 std::to_string(static_cast<int64_t>(timeout_seconds)) +
                                 " s (a plugin's hook that does not return?)");
    }
    pollfd fd{child.stdout_fd(), POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(std::min(left * 1000.0, 1000.0)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = read(child.stdout_fd(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  std::optional<process::ExitStatus> status;
  while (!(status = child.Poll())) usleep(1000);
  const size_t at = output.rfind(kMarker);
  if (at != std::string::npos) {
    const size_t begin = at + std::strlen(kMarker);
    nlohmann::json row = nlohmann::json::parse(
        output.substr(begin, output.find('\n', begin) - begin), nullptr, false);
    if (!row.is_discarded()) {
      row["cell"] = cell.index;  // an executed estimate reads the cell file alone
      row["label"] = cell.Label();
      return row;
    }
  }
  return FailedRow(cell, status->signaled
                             ? "the estimate's process ended with signal " +
                                   std::to_string(status->signal)
                             : "the estimate's process exited with code " +
                                   std::to_string(status->code) + " without a result");
}

}  // namespace

std::string EstimateRowLine(const nlohmann::json& row) {
  return std::string("\n") + kMarker + row.dump() + "\n";
}

nlohmann::json EstimateIsolated(const experiment::Cell& cell, const EstimateTarget& target,
                                const std::string& stderr_path, double timeout_seconds,
                                const std::function<bool()>& stop) {
  if (!process::ForkIsSafe()) return EstimateToJson(EstimateCell(cell, target));
  process::ChildOptions options;
  options.stdout_mode = process::ChildOptions::Stdout::kPipe;
  options.stderr_path = stderr_path;
  process::ChildProcess child(
      [&cell, &target] {
        const std::string line = EstimateRowLine(EstimateToJson(EstimateCell(cell, target)));
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fflush(stdout);
        return 0;
      },
      options);
  return ReadRow(child, cell, timeout_seconds, stop);
}

nlohmann::json EstimateExecuted(const std::string& self, const std::string& cell_file,
                                const experiment::Cell& cell, const EstimateTarget& target,
                                const std::string& stderr_path, double timeout_seconds,
                                const std::function<bool()>& stop) {
  std::vector<std::string> argv = {self, "estimate", cell_file, "--source", cell.source,
                                   "--format", "row"};
  if (target.compute_capability > 0) {
    argv.insert(argv.end(), {"--arch", std::to_string(target.compute_capability)});
  }
  if (!target.device.empty()) argv.insert(argv.end(), {"--device", target.device});
  if (!target.auto_device.empty()) argv.insert(argv.end(), {"--auto-device", target.auto_device});
  process::ChildOptions options;
  options.stdout_mode = process::ChildOptions::Stdout::kPipe;
  options.stderr_path = stderr_path;
  try {
    process::ChildProcess child(argv, options);
    return ReadRow(child, cell, timeout_seconds, stop);
  } catch (const std::exception& error) {
    return FailedRow(cell, std::string("the estimate could not start: ") + error.what());
  }
}

}  // namespace memsweep::estimate
