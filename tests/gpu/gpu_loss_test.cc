// The loss slot on a CUDA device: loss/fused (token chunks and vocabulary blocks) and loss/chunked
// follow loss/full's fp32 losses (the same ATen operations per piece as on the CPU; only the
// summation order differs), and the run's
// largest allocation comes from the caching allocator's trace: with loss/full the fp32 logits of
// the first micro-batch, with loss/fused no block that large.
#include <gtest/gtest.h>

#include "gpu/gpu_test_support.h"

namespace memsweep::testing_support {
namespace {

using train::RunResult;
using train::RunStatus;

class GpuLoss : public GpuTest {};

// A vocabulary large against the rest: fp32 logits of 4 × 64 tokens are 8 MiB.
std::vector<std::string> VocabHeavy(const std::string& loss) {
  return {"model.vocab_size=8192", "strategies.batching.micro_batch_size=4",
          "strategies.loss.plugin=\"" + loss + "\""};
}

TEST_F(GpuLoss, FusedAndChunkedFollowFullInFp32) {
  const RunResult full = Train(GpuRun(4, VocabHeavy("full")));
  ASSERT_EQ(full.status, RunStatus::kOk) << full.error;
  // loss/fused in both orders (in fp32 "auto" takes the token chunks).
  for (const std::string loss : {"fused", "fused vocab", "chunked"}) {
    std::vector<std::string> overrides = VocabHeavy(loss == "fused vocab" ? "fused" : loss);
    if (loss == "fused vocab") overrides.push_back("strategies.loss.order=\"vocab\"");
    const RunResult other = Train(GpuRun(4, overrides));
    ASSERT_EQ(other.status, RunStatus::kOk) << loss << ": " << other.error;
    ExpectLossesClose(other, full, SameArithmetic(GpuRun(4, overrides)));
    EXPECT_LT(other.memory.peak_allocated_bytes, full.memory.peak_allocated_bytes) << loss;
  }
}

// The logits must outgrow the blocks every CUDA run allocates: on an H200 the run's largest
// allocation with 8 MiB of logits was a 32 MiB block served unlabelled at the first matrix
// product of the forward pass (cuBLAS's workspace). 8 × 64 tokens of a
// 32,768-token vocabulary give 64 MiB of fp32 logits.
std::vector<std::string> LogitsAboveTheWorkspace(const std::string& loss) {
  return {"model.vocab_size=32768", "strategies.batching.micro_batch_size=8",
          "strategies.loss.plugin=\"" + loss + "\""};
}

TEST_F(GpuLoss, TheLargestAllocationIsTheLogitsBlockUnlessTheLossIsFused) {
  const int64_t logits_bytes = 4LL * 8 * 64 * 32768;  // a multiple of 2 MiB: no rounding
  const RunResult full = Train(GpuRun(2, LogitsAboveTheWorkspace("full")));
  ASSERT_EQ(full.status, RunStatus::kOk) << full.error;
  EXPECT_EQ(full.memory.largest_allocation_bytes, logits_bytes);
  EXPECT_EQ(full.memory.largest_allocation_stage, "forward");
  EXPECT_EQ(full.memory.largest_allocation_what, "logits");
  const RunResult fused = Train(GpuRun(2, LogitsAboveTheWorkspace("fused")));
  ASSERT_EQ(fused.status, RunStatus::kOk) << fused.error;
  EXPECT_LT(fused.memory.largest_allocation_bytes, logits_bytes);
}

}  // namespace
}  // namespace memsweep::testing_support
