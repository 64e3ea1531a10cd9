// A cell's estimate in a process of its own: forked (EstimateIsolated, where the caller has one
// thread; this test binary has several, so it runs in this process here) and executed
// (EstimateExecuted: `memsweep estimate CELL --source FILE --format row`, what a runner with threads
// — one that looked for a GPU — uses) give the same row, and a child that does not end in time is
// killed and its row says so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/estimate/isolated_estimate.h"
#include "core/experiment/experiment_plan.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {
namespace {

TEST(IsolatedEstimate, AnExecutedEstimateReadsTheCellFileAsTheForkedOneReadsTheCell) {
  const experiment::ExperimentPlan plan =
      experiment::LoadExperimentPlan(SourcePath("experiments/quickstart.toml"), {});
  const std::string cell_file = (FreshTempDir("isolated_estimate") / "cell.toml").string();
  for (const size_t i : {size_t{0}, plan.cells.size() - 1}) {  // one that fits, one that does not
    const experiment::Cell& cell = plan.cells[i];
    std::ofstream(cell_file) << experiment::CellToToml(cell);
    const nlohmann::json forked = estimate::EstimateIsolated(cell, {});
    const nlohmann::json executed =
        estimate::EstimateExecuted(MEMSWEEP_BINARY, cell_file, cell, {}, "", 120);
    ASSERT_NE(executed.value("status", ""), "failed") << executed.dump();
    EXPECT_EQ(executed["status"], forked["status"]) << executed.dump();
    EXPECT_EQ(executed["cell"], cell.index);
    EXPECT_EQ(executed["label"], cell.Label());
    for (const char* key : {"peak_allocated_bytes", "peak_reserved_bytes", "budget_bytes",
                            "largest_allocation_bytes", "peak_stage"}) {
      EXPECT_EQ(executed[key], forked[key]) << key << ": " << executed.dump();
    }
  }
}

TEST(IsolatedEstimate, AnExecutedEstimateThatCannotStartOrEndIsAFailedRow) {
  const experiment::ExperimentPlan plan =
      experiment::LoadExperimentPlan(SourcePath("experiments/quickstart.toml"), {});
  const experiment::Cell& cell = plan.cells.front();
  const nlohmann::json missing = estimate::EstimateExecuted(
      MEMSWEEP_BINARY, "/nonexistent/cell.toml", cell, {}, "", 120);
  EXPECT_EQ(missing.value("status", ""), "failed") << missing.dump();
  EXPECT_EQ(missing["cell"], cell.index);
  // A program that never writes a row: killed at the deadline.
  const std::string hang = (FreshTempDir("isolated_estimate_hang") / "hang.sh").string();
  std::ofstream(hang) << "#!/bin/sh\nexec sleep 30\n";
  std::filesystem::permissions(hang, std::filesystem::perms::owner_all);
  const nlohmann::json hung = estimate::EstimateExecuted(hang, "cell.toml", cell, {}, "", 0.5);
  EXPECT_EQ(hung.value("status", ""), "failed") << hung.dump();
  EXPECT_NE(hung.value("message", "").find("did not end within"), std::string::npos) << hung.dump();
}

}  // namespace
}  // namespace memsweep::testing_support
