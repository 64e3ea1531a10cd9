#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/config/config_error.h"
#include "core/results/loss_verification.h"
#include "support/run_configs.h"

namespace memsweep {
namespace {

using testing_support::TinyRun;
using testing_support::Train;

TEST(Bf16AutocastTest, TrainsCloseToFp32WithSmallerSavedActivations) {
  const std::vector<std::string> shape = {"strategies.batching.padding=max_length",
                                          "strategies.batching.micro_batch_size=4"};
  std::vector<std::string> bf16 = shape;
  bf16.push_back("strategies.precision.plugin=bf16-autocast");
  const train::RunResult fp32_run = Train(TinyRun(4, shape));
  const train::RunResult bf16_run = Train(TinyRun(4, bf16));
  ASSERT_EQ(bf16_run.status, train::RunStatus::kOk) << bf16_run.error;
  // bf16 against fp32 is not the same arithmetic reordered: the loss moves with the bf16
  // rounding of the logits, whose scale the losses do not reveal (at step 0, logits near 0,
  // ~1e-6 here; later ~1e-4), so no rounding bound follows from the losses alone. The runs are
  // held to memsweep's definition of "approximately the same training", the tolerance its
  // verification calls `close` (docs/results.md, "Tolerances").
  const double close = results::ApproximateTolerance("bfloat16").value();
  for (size_t i = 0; i < fp32_run.steps.size(); ++i) {
    EXPECT_NEAR(bf16_run.steps[i].loss, fp32_run.steps[i].loss, close * fp32_run.steps[i].loss)
        << "step " << i;
    EXPECT_NE(bf16_run.steps[i].loss, fp32_run.steps[i].loss) << "bf16 should change the math";
  }
  // Parameters, gradients and optimizer state stay fp32 ...
  EXPECT_EQ(bf16_run.memory.params_bytes, fp32_run.memory.params_bytes);
  EXPECT_EQ(bf16_run.memory.optimizer_bytes, fp32_run.memory.optimizer_bytes);
  // ... while what forward keeps for backward shrinks (partly: RMSNorm, the residual stream and
  // the loss stay fp32 under autocast; see docs/benchmarks-history.md).
  EXPECT_LT(bf16_run.memory.saved_activations_bytes, fp32_run.memory.saved_activations_bytes)
      << bf16_run.memory.saved_activations_bytes << " vs " << fp32_run.memory.saved_activations_bytes;
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
}

TEST(Bf16AutocastTest, AutocastDoesNotOutliveAnOomInForward) {
  const train::RunResult oom = Train(TinyRun(2, {"strategies.precision.plugin=bf16-autocast",
                                                 "strategies.batching.micro_batch_size=16",
                                                 "strategies.batching.padding=max_length",
                                                 "device.memory_budget=\"3MiB\""}));
  ASSERT_EQ(oom.status, train::RunStatus::kOom) << oom.error;
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
}

}  // namespace
}  // namespace memsweep
