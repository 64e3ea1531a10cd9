// The cuBLAS workspaces an estimate for CUDA adds (core/estimate/blas_workspaces.h): their size
// as LibTorch 2.11 chooses it, and the two a training step takes (the forward's thread and
// autograd's), against the same estimate for the CPU, which takes none.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/estimate/blas_workspaces.h"
#include "core/estimate/cell_estimate.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {
namespace {

using estimate::CellEstimate;
using estimate::CublasWorkspaceBytes;
using estimate::EstimateStatus;

constexpr int64_t kDefault = 4096 * 1024 * 2 + 16 * 1024 * 8;  // ":4096:2:16:8"
constexpr int64_t kHopper = 4096 * 8 * 1024;                    // ":4096:8"

TEST(BlasWorkspaces, SizeFollowsTheArchitectureAndTheEnvironment) {
  EXPECT_EQ(CublasWorkspaceBytes(86, std::nullopt), kDefault);
  EXPECT_EQ(CublasWorkspaceBytes(80, std::nullopt), kDefault);
  EXPECT_EQ(CublasWorkspaceBytes(90, std::nullopt), kHopper);
  EXPECT_EQ(CublasWorkspaceBytes(86, std::string(":4096:8")), kHopper);
  EXPECT_EQ(CublasWorkspaceBytes(90, std::string(":4096:2:16:8")), kDefault);
  EXPECT_EQ(CublasWorkspaceBytes(86, std::string(":16:8")), 16 * 1024 * 8);  // deterministic mode
  EXPECT_EQ(CublasWorkspaceBytes(90, std::string("nonsense")), kHopper);      // LibTorch's default
}

TEST(BlasWorkspaces, ReadsTheComputeCapabilityAsNvidiaWritesIt) {
  EXPECT_EQ(estimate::ParseComputeCapability("sm_90"), 90);
  EXPECT_EQ(estimate::ParseComputeCapability("9.0"), 90);  // nvidia-smi --query-gpu=compute_cap
  EXPECT_EQ(estimate::ParseComputeCapability("86"), 86);
  EXPECT_EQ(estimate::ParseComputeCapability("sm_100"), 100);  // Blackwell
  EXPECT_EQ(estimate::ParseComputeCapability("12.0"), 120);
  for (const char* bad : {"", "sm_", "h100", "9.", ".0", "8.66", "-86", "2.0", "1000"}) {
    EXPECT_EQ(estimate::ParseComputeCapability(bad), std::nullopt) << bad;
  }
}

// The same run estimated for the CPU and for CUDA: the CUDA estimate holds one workspace from the
// forward's first GEMM and a second from the backward's, so its peak allocated bytes exceed the
// CPU's by exactly two workspaces where the peak falls after the first backward GEMM.
TEST(BlasWorkspaces, ACudaEstimateHoldsTheForwardsAndTheBackwardsWorkspace) {
  for (int cc : {86, 90}) {
    const CellEstimate cpu = estimate::EstimateRun(TinyRun(2), c10::DeviceType::CPU);
    const CellEstimate cuda = estimate::EstimateRun(TinyRun(2), c10::DeviceType::CUDA, cc);
    ASSERT_EQ(cpu.status, EstimateStatus::kEstimated) << cpu.message;
    ASSERT_EQ(cuda.status, EstimateStatus::kEstimated) << cuda.message;
    EXPECT_EQ(cpu.blas_workspaces, 0);
    EXPECT_EQ(cuda.blas_workspaces, 2);
    const int64_t w = CublasWorkspaceBytes(cc);
    EXPECT_EQ(cuda.blas_workspace_bytes, w);
    ASSERT_EQ(cuda.run.timeline.size(), cpu.run.timeline.size());
    // Stage by stage: two workspaces from the first backward on, to the run's end.
    bool backward_seen = false;
    for (size_t i = 0; i < cpu.run.timeline.size(); ++i) {
      const auto& c = cpu.run.timeline[i];
      const auto& g = cuda.run.timeline[i];
      ASSERT_STREQ(c.stage, g.stage);
      backward_seen = backward_seen || std::string_view(c.stage) == "backward";
      if (backward_seen) {
        EXPECT_EQ(g.allocated_bytes - c.allocated_bytes, 2 * w) << c.stage << " step " << c.step;
      }
    }
    EXPECT_EQ(cuda.run.memory.peak_allocated_bytes - cpu.run.memory.peak_allocated_bytes, 2 * w);
  }
}

}  // namespace
}  // namespace memsweep::testing_support
