// adapter/lora on a CUDA device: the same frozen base and factors as on the CPU (the factors are
// drawn on the CPU from the experiment's seed, the base moved to the device as built), so fp32
// losses differ from the CPU run's only in summation order: TrajectoryTolerance, as for full
// fine-tuning (gpu_training_test.cc). The breakdown splits the parameters' bytes the same way on
// both devices: the frozen base in its dtype, the factors trainable with AdamW's two moments.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/gpu_test_support.h"
#include "core/model/linear_shapes.h"
#include "core/results/loss_verification.h"

namespace memsweep::testing_support {
namespace {

using train::RunResult;
using train::RunStatus;

class GpuAdapter : public GpuTest {};

void ExpectAdapterRunOk(const RunResult& r) { ASSERT_EQ(r.status, RunStatus::kOk) << r.error; }

// LoRA of rank 4 on every linear module of the tiny model (the plugin's "all-linear" default).
std::vector<std::string> WithLora(std::vector<std::string> more = {}) {
  more.push_back("strategies.adapter.plugin=\"lora\"");
  more.push_back("strategies.adapter.rank=4");
  return more;
}

TEST_F(GpuAdapter, LoraFp32LossesFollowTheCpuRun) {
  const RunResult gpu = Train(GpuRun(4, WithLora()));
  const RunResult cpu = Train(CpuRun(4, WithLora()));
  ExpectAdapterRunOk(gpu);
  ExpectAdapterRunOk(cpu);
  EXPECT_EQ(gpu.device.device, "cuda:0");
  ExpectLossesClose(gpu, cpu, SameArithmetic(CpuRun(4, WithLora())));
}

TEST_F(GpuAdapter, FrozenAndTrainableBytesEqualTheCpuRunAndTheFormula) {
  const RunResult gpu = Train(GpuRun(2, WithLora()));
  const RunResult cpu = Train(CpuRun(2, WithLora()));
  ExpectAdapterRunOk(gpu);
  ExpectAdapterRunOk(cpu);
  // The whole model is frozen, in fp32; only the factors train.
  const int64_t base = GpuRun(1, WithLora()).model.llama.ParameterCount() * 4;
  EXPECT_EQ(gpu.memory.frozen_params_bytes, base);
  EXPECT_EQ(gpu.memory.frozen_params_bytes, cpu.memory.frozen_params_bytes);
  EXPECT_GT(gpu.memory.trainable_params_bytes, 0);
  EXPECT_EQ(gpu.memory.trainable_params_bytes, cpu.memory.trainable_params_bytes);
  EXPECT_EQ(gpu.memory.params_bytes,
            gpu.memory.frozen_params_bytes + gpu.memory.trainable_params_bytes);
  // No optimizer state for the frozen base: AdamW's exp_avg and exp_avg_sq of the factors.
  EXPECT_EQ(gpu.memory.optimizer_bytes, 2 * gpu.memory.trainable_params_bytes);
  EXPECT_EQ(gpu.summary.trainable_params, cpu.summary.trainable_params);
}

TEST_F(GpuAdapter, ABf16BaseUnderBf16AutocastTrainsAndHalvesTheFrozenBytes) {
  const RunResult r = Train(GpuRun(4, WithLora({"strategies.adapter.base_dtype=\"bf16\"",
                                                "strategies.precision.plugin=\"bf16-autocast\""})));
  ExpectAdapterRunOk(r);
  EXPECT_EQ(r.compute_dtype, "bfloat16");
  ASSERT_EQ(r.steps.size(), 4u);
  for (const auto& step : r.steps) EXPECT_TRUE(std::isfinite(step.loss)) << "step " << step.step;
  const int64_t fp32_base = GpuRun(1, WithLora()).model.llama.ParameterCount() * 4;
  EXPECT_EQ(r.memory.frozen_params_bytes * 2, fp32_base);
}

// fp16 autocast with loss scaling beside a frozen base: the scaler unscales and checks only the
// factors' gradients (the base has none), skips the step of an injected overflow and backs off;
// the losses follow the fp32 LoRA run within fp16's tolerance, and the base keeps its bytes.
TEST_F(GpuAdapter, Fp16LossScalingTrainsTheFactorsAndSkipsAnOverflowedStep) {
  const RunResult fp16 = Train(GpuRun(5, WithLora({"strategies.precision.plugin=\"fp16\"",
                                                   "strategies.precision.inject_inf_at_step=2"})));
  const RunResult fp32 = Train(GpuRun(5, WithLora()));
  ExpectAdapterRunOk(fp16);
  ExpectAdapterRunOk(fp32);
  ASSERT_EQ(fp16.steps.size(), 5u);
  for (const auto& step : fp16.steps) {
    EXPECT_EQ(step.skipped, step.step == 2) << "step " << step.step;
    EXPECT_TRUE(std::isfinite(step.loss)) << "step " << step.step;
  }
  EXPECT_EQ(fp16.plugin_metrics.at("fp16.skipped_steps"), 1.0);
  EXPECT_EQ(fp16.memory.frozen_params_bytes, fp32.memory.frozen_params_bytes);
  // Up to the skipped step the two runs apply the same updates.
  const double close = results::ApproximateTolerance("float16").value();
  for (size_t i = 0; i <= 2; ++i) {
    EXPECT_NEAR(fp16.steps[i].loss, fp32.steps[i].loss, close * std::abs(fp32.steps[i].loss))
        << "step " << i;
  }
}

// QLoRA of rank 4: the base's linear layers in NF4, their products in bf16.
std::vector<std::string> WithQlora(std::vector<std::string> more = {}) {
  more.push_back("strategies.adapter.plugin=\"qlora\"");
  more.push_back("strategies.adapter.rank=4");
  return more;
}

// The same NF4 codes on both devices (quantised from the same fp32 weights), products in bf16:
// each device's run approximately its fp32 arithmetic, as for bf16 autocast.
TEST_F(GpuAdapter, QloraLossesFollowTheCpuRun) {
  const RunResult gpu = Train(GpuRun(4, WithQlora()));
  const RunResult cpu = Train(CpuRun(4, WithQlora()));
  ExpectAdapterRunOk(gpu);
  ExpectAdapterRunOk(cpu);
  const double close = results::ApproximateTolerance("bfloat16").value();
  const auto fp32 = SameArithmetic(CpuRun(4));
  ExpectLossesClose(gpu, cpu, [&](int64_t step) { return 2 * close + fp32(step); });
}

// NF4 codes, 8-bit absmax, fp32 second-level absmax and offset per linear layer; the rest of the
// model in bf16 (compute_dtype) — the same bytes on both devices.
TEST_F(GpuAdapter, QloraFrozenBytesAreWhatTheShapesGive) {
  const config::RunConfig cfg = GpuRun(1, WithQlora());
  const RunResult gpu = Train(cfg);
  const RunResult cpu = Train(CpuRun(1, WithQlora()));
  ExpectAdapterRunOk(gpu);
  ExpectAdapterRunOk(cpu);
  int64_t nf4 = 0, values = 0;
  for (const model::LinearShape& l : model::ShapeOf(cfg.model.llama).linears) {
    if (l.block < 0) continue;
    const int64_t n = l.in_features * l.out_features;
    nf4 += n / 2 + n / 64 + 4 * ((n / 64 + 255) / 256) + 4;
    values += n;
  }
  const int64_t rest = (cfg.model.llama.ParameterCount() - values) * 2;
  EXPECT_EQ(gpu.memory.frozen_params_bytes, nf4 + rest);
  EXPECT_EQ(cpu.memory.frozen_params_bytes, nf4 + rest);
}

// A budget only the quantised base fits: QLoRA's own peak allocated bytes on the small preset
// (~34M parameters, one row of 16 tokens) plus half the bytes the fp32 base has beyond the NF4 one.
// LoRA over the fp32 base needs about that whole difference more, so it runs out of memory under
// the budget, while QLoRA keeps the other half as headroom for what the caching allocator holds.
// (A multiple of QLoRA's peak does not separate them on CUDA, whose runs peak above the CPU's —
// on an H200 QLoRA's peak here was 104 MiB against a 128.5 MiB fp32 base, and the 4 × 64-token
// cell peaked at 191 MiB on CUDA against 127 MiB on the CPU, a 32 MiB block the caching
// allocator serves unlabelled at the first matrix product among it; and the unbudgeted peak
// reserved holds cached blocks a budget makes the allocator free.)
TEST_F(GpuAdapter, QloraFitsABudgetOnlyTheQuantisedBaseFits) {
  const std::vector<std::string> small = {"model.preset=\"small\"",
                                          "strategies.batching.micro_batch_size=1",
                                          "strategies.batching.seq_len=16"};
  const RunResult measured = Train(GpuRun(2, WithQlora(small)));
  ExpectAdapterRunOk(measured);
  const int64_t fp32_base = GpuRun(1, small).model.llama.ParameterCount() * 4;
  const int64_t nf4_base = measured.memory.frozen_params_bytes;
  ASSERT_LT(nf4_base, fp32_base);
  const int64_t budget = measured.memory.peak_allocated_bytes + (fp32_base - nf4_base) / 2;
  std::vector<std::string> capped = small;
  capped.push_back("device.memory_budget=" + std::to_string(budget));
  const RunResult lora = Train(GpuRun(2, WithLora(capped)));
  const RunResult qlora = Train(GpuRun(2, WithQlora(capped)));
  EXPECT_EQ(lora.status, RunStatus::kOom) << lora.error;
  ExpectAdapterRunOk(qlora);
  std::printf("budget %.1f MiB (the fp32 base alone %.1f MiB): LoRA over fp32 %s; QLoRA peak "
              "%.1f MiB allocated, %.1f MiB reserved, frozen base %.1f MiB\n",
              budget / 1048576.0, fp32_base / 1048576.0,
              lora.status == RunStatus::kOom ? "ran out of memory" : "fit",
              qlora.memory.peak_allocated_bytes / 1048576.0,
              qlora.memory.peak_reserved_bytes / 1048576.0,
              qlora.memory.frozen_params_bytes / 1048576.0);
}

}  // namespace
}  // namespace memsweep::testing_support
