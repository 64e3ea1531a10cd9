// Training on a CUDA device: the same loop and plugins as on the CPU, measured by the CUDA caching
// allocator. Tolerances (docs/metrics.md, "Test tolerances"): fp32 on both devices differs only
// in summation order (cuBLAS and CPU BLAS block their sums differently; TF32 is off for matmuls
// by LibTorch's default): TrajectoryTolerance, the rounding path of a step grown with the steps.
// Reduced precision against fp32 is no reordering of the same arithmetic: held to memsweep's
// definition of approximately the same training (results::ApproximateTolerance, what its
// verification calls `close`).
#include <gtest/gtest.h>

#include <cmath>

#include "core/config/config_error.h"
#include "gpu/gpu_test_support.h"

namespace memsweep::testing_support {
namespace {

using train::RunResult;
using train::RunStatus;

class GpuTraining : public GpuTest {};

void ExpectOk(const RunResult& r) { ASSERT_EQ(r.status, RunStatus::kOk) << r.error; }

TEST_F(GpuTraining, TinyAndSmallFp32LossesFollowTheCpuRun) {
  for (const char* preset : {"tiny", "small"}) {
    const std::vector<std::string> o = {std::string("model.preset=\"") + preset + "\""};
    const RunResult gpu = Train(GpuRun(4, o));
    const RunResult cpu = Train(CpuRun(4, o));
    ExpectOk(gpu);
    ExpectOk(cpu);
    EXPECT_EQ(gpu.device.device, "cuda:0");
    EXPECT_FALSE(gpu.environment.gpu_name.empty());
    ExpectLossesClose(gpu, cpu, SameArithmetic(CpuRun(4, o)));
  }
}

TEST_F(GpuTraining, TinyAndSmallBf16LossesFollowTheCpuRun) {
  for (const char* preset : {"tiny", "small"}) {
    const std::vector<std::string> o = {std::string("model.preset=\"") + preset + "\"",
                                        "strategies.precision.plugin=\"bf16-autocast\""};
    const RunResult gpu = Train(GpuRun(4, o));
    const RunResult cpu = Train(CpuRun(4, o));
    ExpectOk(gpu);
    ExpectOk(cpu);
    EXPECT_EQ(gpu.compute_dtype, "bfloat16");
    // Each bf16 run approximately its device's fp32 run, and those two the same arithmetic
    // reordered: the sum of the three.
    const double close = results::ApproximateTolerance("bfloat16").value();
    const auto fp32 = SameArithmetic(CpuRun(4, {o.front()}));
    ExpectLossesClose(gpu, cpu, [&](int64_t step) { return 2 * close + fp32(step); });
  }
}

TEST_F(GpuTraining, ModelStateBytesEqualTheCpuRunAndTheFormula) {
  const RunResult gpu = Train(GpuRun(2));
  const RunResult cpu = Train(CpuRun(2));
  ExpectOk(gpu);
  ExpectOk(cpu);
  const int64_t params = GpuRun(1).model.llama.ParameterCount() * 4;
  EXPECT_EQ(gpu.memory.params_bytes, params);
  EXPECT_EQ(gpu.memory.grads_bytes, params);
  EXPECT_EQ(gpu.memory.optimizer_bytes, 2 * params);  // AdamW: exp_avg and exp_avg_sq
  EXPECT_EQ(gpu.memory.params_bytes, cpu.memory.params_bytes);
  EXPECT_EQ(gpu.memory.grads_bytes, cpu.memory.grads_bytes);
  EXPECT_EQ(gpu.memory.optimizer_bytes, cpu.memory.optimizer_bytes);
  // The caching allocator rounds blocks up (512 B) and keeps a cache: reserved >= active >=
  // allocated, and the peak holds at least the model state.
  EXPECT_GE(gpu.memory.peak_reserved_bytes, gpu.memory.peak_active_bytes);
  EXPECT_GE(gpu.memory.peak_active_bytes, gpu.memory.peak_allocated_bytes);
  EXPECT_GE(gpu.memory.peak_allocated_bytes, 4 * params);
}

TEST_F(GpuTraining, ABudgetBelowThePeakRunsOutOfMemoryAndOneJustAboveFits) {
  const RunResult free_run = Train(GpuRun(3));
  ExpectOk(free_run);
  const int64_t peak = free_run.memory.peak_reserved_bytes;
  const int64_t tight = peak * 7 / 10;
  const RunResult oom = Train(GpuRun(3, {"device.emulate=" + std::to_string(tight)}));
  EXPECT_EQ(oom.status, RunStatus::kOom) << oom.error;
  EXPECT_NE(oom.error.find("out of memory"), std::string::npos) << oom.error;
  ASSERT_TRUE(oom.oom.has_value());
  EXPECT_GT(oom.oom->requested_bytes, 0);
  EXPECT_EQ(oom.oom->budget_bytes, tight);
  EXPECT_FALSE(oom.oom->stage.empty());
  EXPECT_GE(oom.memory.oom_count, 1);
  // Just above: the budget caps the allocator's absolute reserved bytes, the peak is relative to
  // what was allocated when the run started (cuBLAS workspaces of earlier runs in this process:
  // 64 MiB on an H200; docs/metrics.md, "Baseline"). So the baseline, the peak and one 20 MiB
  // segment of slack for the allocator's rounding.
  const int64_t baseline = free_run.memory.baseline_bytes;
  const int64_t enough = baseline + peak + (20 << 20);
  const RunResult fit = Train(GpuRun(3, {"device.emulate=" + std::to_string(enough)}));
  ExpectOk(fit);
  EXPECT_LE(fit.memory.baseline_bytes + fit.memory.peak_reserved_bytes, enough);
}

TEST_F(GpuTraining, EmulatingACardLargerThanThisGpuIsRefusedAtPlanTime) {
  EXPECT_THROW(GpuRun(1, {"device.emulate=\"1000GiB\""}), config::ConfigError);
}

TEST_F(GpuTraining, CpuKernelsAreRefusedAtPlanTimeNamingTheAlternative) {
  try {
    GpuRun(1, {"strategies.attention.plugin=\"flash\""});
    FAIL() << "attention/flash was accepted on CUDA";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("plugin = \"sdpa\""), std::string::npos) << e.what();
  }
}

TEST_F(GpuTraining, EmptyCacheReleasesReservedBytes) {
  const RunResult r = Train(config::ParseRunConfig(
      "[experiment]\nsteps = 4\n[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[device]\ntype = \"cuda\"\n[strategies.batching]\nseq_len = 64\n"
      "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = 1\n",
      SourcePath("experiments/test.toml")));
  ExpectOk(r);
  ASSERT_TRUE(r.plugin_metrics.count("empty_cache.released_bytes"));
  EXPECT_GT(r.plugin_metrics.at("empty_cache.released_bytes"), 0.0);
  EXPECT_EQ(r.plugin_metrics.at("empty_cache.calls"), 4.0);
}

TEST_F(GpuTraining, Fp16ScalerSkipsTheStepOfAnInjectedOverflowAndBacksOff) {
  const RunResult r = Train(GpuRun(5, {"strategies.precision.plugin=\"fp16\"",
                                       "strategies.precision.inject_inf_at_step=2"}));
  ExpectOk(r);
  ASSERT_EQ(r.steps.size(), 5u);
  for (const auto& step : r.steps) {
    EXPECT_EQ(step.skipped, step.step == 2) << "step " << step.step;
    EXPECT_TRUE(std::isfinite(step.loss)) << "step " << step.step;
    ASSERT_TRUE(step.metrics.count("fp16.loss_scale"));
  }
  const double before = r.steps[2].metrics.at("fp16.loss_scale");
  EXPECT_DOUBLE_EQ(r.steps[3].metrics.at("fp16.loss_scale"), before * 0.5);
  EXPECT_EQ(r.plugin_metrics.at("fp16.skipped_steps"), 1.0);
}

TEST_F(GpuTraining, Fp16BesideAShardingThatOwnsTheStepIsRefusedAtPlanTime) {
  EXPECT_THROW(GpuRun(1, {"strategies.precision.plugin=\"fp16\"",
                          "strategies.sharding.plugin=\"zero2\""}),
               config::ConfigError);
}

TEST_F(GpuTraining, Fp16LossesFollowTheFp32Run) {
  const RunResult fp16 = Train(GpuRun(4, {"strategies.precision.plugin=\"fp16\""}));
  const RunResult fp32 = Train(GpuRun(4));
  ExpectOk(fp16);
  ExpectOk(fp32);
  const double close = results::ApproximateTolerance("float16").value();
  ExpectLossesClose(fp16, fp32, [close](int64_t) { return close; });
}

TEST_F(GpuTraining, CheckpointingAndAccumulationAreEquivalentOnCuda) {
  const RunResult plain = Train(GpuRun(3));
  const RunResult full = Train(GpuRun(3, {"strategies.checkpointing.plugin=\"full\""}));
  ExpectOk(plain);
  ExpectOk(full);
  // The recompute runs the same kernels, but CUDA's atomics may sum in another order.
  ExpectLossesClose(full, plain, SameArithmetic(GpuRun(3)));
  EXPECT_LT(full.memory.saved_activations_bytes, plain.memory.saved_activations_bytes);
  const RunResult whole = Train(GpuRun(3, {"strategies.batching.micro_batch_size=8"}));
  const RunResult accumulated = Train(GpuRun(3, {"strategies.batching.micro_batch_size=4",
                                                 "strategies.batching.accumulation_steps=2"}));
  ExpectOk(whole);
  ExpectOk(accumulated);
  ExpectLossesClose(accumulated, whole,
                    SameArithmetic(GpuRun(3, {"strategies.batching.micro_batch_size=8"})));
}

TEST_F(GpuTraining, StepTimesComeFromCudaEventsAndMfuFromTheGpusGemmRate) {
  const RunResult r = Train(GpuRun(4, {"strategies.precision.plugin=\"bf16-autocast\""}));
  ExpectOk(r);
  for (const auto& step : r.steps) EXPECT_GT(step.seconds, 0.0);
  EXPECT_GT(r.summary.peak_flops, 1e12);  // any CUDA GPU multiplies bf16 faster than 1 TFLOP/s
  EXPECT_GT(r.summary.mfu, 0.0);
  EXPECT_LT(r.summary.mfu, 1.0);
}

}  // namespace
}  // namespace memsweep::testing_support
