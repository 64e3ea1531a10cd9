// memsweep estimate's figures against the measured run of the same configuration: the training
// loop on the meta device (core/estimate/cell_estimate.h) allocates what the CPU run allocates,
// slot by slot. Measured on the CPU the two agree to the byte (docs/estimate.md); the tests hold
// 1 % on peak allocated bytes (5 % on reserved) so that a LibTorch kernel allocating a scratch
// buffer of its own cannot break them, and fail on a gross regression.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/env/cuda_probe.h"
#include "core/estimate/cell_estimate.h"
#include "core/experiment/experiment_plan.h"
#include "core/memory/rss.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {
namespace {

namespace fs = std::filesystem;
using estimate::CellEstimate;
using estimate::EstimateStatus;
using train::RunStatus;

double Relative(int64_t estimated, int64_t measured) {
  return std::abs(static_cast<double>(estimated - measured)) / static_cast<double>(measured);
}

struct Case {
  const char* name;
  std::vector<std::string> overrides;
};

// One configuration of every slot whose plugins the estimate runs (the defaults: fp32, eager
// attention, no checkpointing, the system allocator, loss/full, kernels/aten, no adapter), and
// bf16 autocast (memsweep/autocast.h's meta autocast) with the plugins it meets.
std::vector<Case> Cases() {
  return {
      {"defaults", {}},
      {"bf16", {"strategies.precision.plugin=\"bf16\""}},
      {"checkpointing full", {"strategies.checkpointing.plugin=\"full\""}},
      {"accumulation 3", {"strategies.batching.accumulation_steps=3"}},
      {"sdpa", {"strategies.attention.plugin=\"sdpa\""}},
      {"sdpa bf16", {"strategies.attention.plugin=\"sdpa\"", "strategies.precision.plugin=\"bf16\""}},
      {"sdpa packed rows",
       {"strategies.attention.plugin=\"sdpa\"", "strategies.packing.plugin=\"pack\""}},
      {"sdpa flash backend",
       {"strategies.attention.plugin=\"sdpa\"", "strategies.attention.backend=\"flash\""}},
      {"checkpointing selective", {"strategies.checkpointing.plugin=\"selective\""}},
      {"lora", {"strategies.adapter.plugin=\"lora\"", "strategies.adapter.rank=4"}},
      {"loss chunked", {"strategies.loss.plugin=\"chunked\""}},
      {"loss fused", {"strategies.loss.plugin=\"fused\""}},
      {"kernels fused", {"strategies.kernels.plugin=\"fused\""}},
      {"caching allocator", {"strategies.allocator.plugin=\"caching\""}},
      {"packing none", {"strategies.packing.plugin=\"none\""}},
      {"chunked attention", {"strategies.attention.plugin=\"chunked\""}},
      {"flash", {"strategies.attention.plugin=\"flash\""}},
      {"flash bf16", {"strategies.attention.plugin=\"flash\"", "strategies.precision.plugin=\"bf16\""}},
      {"flash packed rows",
       {"strategies.attention.plugin=\"flash\"", "strategies.packing.plugin=\"pack\""}},
      {"bf16-autocast", {"strategies.precision.plugin=\"bf16-autocast\""}},
      {"bf16-autocast sdpa",
       {"strategies.precision.plugin=\"bf16-autocast\"", "strategies.attention.plugin=\"sdpa\""}},
      {"bf16-autocast lora",
       {"strategies.precision.plugin=\"bf16-autocast\"", "strategies.adapter.plugin=\"lora\"",
        "strategies.adapter.rank=4"}},
      // The CPU's bf16 upcast products (the AVX2 default), and through the eager attention's
      // folded GEMM on rows of up to 1,024 tokens, which an estimate of a CPU run takes too
      // (memsweep/compute_device.h; without it: 31,993,512 estimated against 33,152,752).
      {"bf16 upcast gemm", {"strategies.precision.plugin=\"bf16\"", "device.gemm=\"upcast\""}},
      {"bf16-autocast upcast gemm long rows",
       {"strategies.precision.plugin=\"bf16-autocast\"", "device.gemm=\"upcast\"",
        "device.threads=1", "strategies.batching.seq_len=1024",
        "strategies.batching.micro_batch_size=1", "strategies.batching.accumulation_steps=8",
        "strategies.batching.padding=\"longest\"", "experiment.warmup_steps=0"}},

      // Logits in the compute dtype under CPU autocast: cross_entropy_loss is on the CPU's fp32
      // list, which takes an fp32 copy of the bf16 logits (the estimate's meta autocast applies
      // it: −13.9 % and −6.9 % before). The upcast products keep oneDNN's native bf16 GEMM, whose
      // scratch buffers the estimate does not model, out of the comparison (docs/estimate.md).
      {"bf16-autocast logits in compute dtype",
       {"strategies.precision.plugin=\"bf16-autocast\"", "strategies.loss.logits_dtype=\"compute\"",
        "device.gemm=\"upcast\""}},
      {"bf16-autocast chunked loss in compute dtype",
       {"strategies.precision.plugin=\"bf16-autocast\"", "strategies.loss.plugin=\"chunked\"",
        "strategies.loss.logits_dtype=\"compute\"", "device.gemm=\"upcast\""}},
      {"checkpointing every 2", {"strategies.checkpointing.plugin=\"every_k\""}},
      {"qlora", {"strategies.adapter.plugin=\"qlora\"", "strategies.adapter.rank=4"}},
      {"qlora no double quant",
       {"strategies.adapter.plugin=\"qlora\"", "strategies.adapter.rank=4",
        "strategies.adapter.double_quant=false"}},
  };
}

TEST(EstimateTest, PeaksFollowTheMeasuredRunForEverySlot) {
  // QLoRA's NF4 code tables are made once per process, on the CPU, at its first product: in a
  // worker and in an estimate's process alike they count in that first run (the estimate's meta
  // tensors alias them). One QLoRA run first, so that neither run here makes them.
  ASSERT_EQ(Train(TinyRun(1, {"strategies.adapter.plugin=\"qlora\"", "strategies.adapter.rank=4"}))
                .status,
            RunStatus::kOk);
  for (const Case& c : Cases()) {
    const config::RunConfig cfg = TinyRun(3, c.overrides);
    const train::RunResult measured = Train(cfg);
    ASSERT_EQ(measured.status, RunStatus::kOk) << c.name << ": " << measured.error;
    const CellEstimate e = estimate::EstimateRun(cfg);
    ASSERT_EQ(e.status, EstimateStatus::kEstimated) << c.name << ": " << e.message;
    const train::MemoryBreakdown& m = measured.memory;
    const train::MemoryBreakdown& x = e.run.memory;
    std::printf("%-20s peak allocated %12lld measured, %12lld estimated; reserved %lld, %lld\n",
                c.name, static_cast<long long>(m.peak_allocated_bytes),
                static_cast<long long>(x.peak_allocated_bytes),
                static_cast<long long>(m.peak_reserved_bytes),
                static_cast<long long>(x.peak_reserved_bytes));
    EXPECT_LE(Relative(x.peak_allocated_bytes, m.peak_allocated_bytes), 0.01) << c.name;
    EXPECT_LE(Relative(x.peak_reserved_bytes, m.peak_reserved_bytes), 0.05) << c.name;
    // The model state is the parameters' and optimizer's own tensors: exact.
    EXPECT_EQ(x.params_bytes, m.params_bytes) << c.name;
    EXPECT_EQ(x.grads_bytes, m.grads_bytes) << c.name;
    EXPECT_EQ(x.optimizer_bytes, m.optimizer_bytes) << c.name;
    EXPECT_EQ(x.largest_allocation_bytes, m.largest_allocation_bytes) << c.name;
    EXPECT_EQ(x.largest_allocation_what, m.largest_allocation_what) << c.name;
    // An estimate computes nothing: its losses have no value.
    ASSERT_FALSE(e.run.steps.empty()) << c.name;
    EXPECT_TRUE(std::isnan(e.run.steps.back().loss)) << c.name;
  }
}

// A tied embedding and LM head gets two gradients, summed by autograd's engine before they reach
// the weight: on the CPU in place when the engine holds the only reference to the first (loss/fused
// returns a buffer of its own), on the meta device only with ScopedInPlaceGradientSums — without
// it the estimate held one head-sized tensor more (+17 % at Qwen2.5-0.5B's head). A vocabulary of
// 8,192 makes the head's gradient the largest tensor of the step.
TEST(EstimateTest, ATiedHeadsTwoGradientsAreSummedAsTheCpuSumsThem) {
  for (const char* loss : {"full", "chunked", "fused"}) {
    for (const char* precision : {"fp32", "bf16-autocast"}) {
      const config::RunConfig cfg =
          TinyRun(3, {"model.vocab_size=8192", "model.tie_word_embeddings=true",
                      std::string("strategies.loss.plugin=\"") + loss + "\"",
                      std::string("strategies.precision.plugin=\"") + precision + "\""});
      const train::RunResult measured = Train(cfg);
      ASSERT_EQ(measured.status, RunStatus::kOk) << loss << " " << precision << ": " << measured.error;
      const CellEstimate e = estimate::EstimateRun(cfg);
      ASSERT_EQ(e.status, EstimateStatus::kEstimated) << e.message;
      std::printf("tied, loss/%-8s %-14s peak allocated %lld measured, %lld estimated\n", loss,
                  precision, static_cast<long long>(measured.memory.peak_allocated_bytes),
                  static_cast<long long>(e.run.memory.peak_allocated_bytes));
      EXPECT_LE(Relative(e.run.memory.peak_allocated_bytes, measured.memory.peak_allocated_bytes),
                0.01)
          << loss << " " << precision;
    }
  }
}

// bf16 autocast with full checkpointing, and with the fused loss: equal to the byte, and on a CPU
// whose bf16 products run natively (oneDNN, AVX512-BF16 or AMX) 0.73 % below the measured peak on
// the tiny preset — a oneDNN GEMM's scratch buffer (116,480 bytes, transient) at this small
// model's peak, which the estimate does not model (docs/estimate.md); with the upcast products,
// equal. Held at 5 % so that a gross regression fails.
TEST(EstimateTest, AutocastWithCheckpointingOrTheFusedLossStaysWithinFivePercent) {
  const std::vector<Case> cases = {
      {"bf16-autocast checkpointing",
       {"strategies.precision.plugin=\"bf16-autocast\"", "strategies.checkpointing.plugin=\"full\""}},
      {"bf16-autocast loss fused",
       {"strategies.precision.plugin=\"bf16-autocast\"", "strategies.loss.plugin=\"fused\""}},
  };
  for (const Case& c : cases) {
    const config::RunConfig cfg = TinyRun(3, c.overrides);
    const train::RunResult measured = Train(cfg);
    ASSERT_EQ(measured.status, RunStatus::kOk) << c.name << ": " << measured.error;
    const CellEstimate e = estimate::EstimateRun(cfg);
    ASSERT_EQ(e.status, EstimateStatus::kEstimated) << c.name << ": " << e.message;
    std::printf("%-28s peak allocated %lld measured, %lld estimated\n", c.name,
                static_cast<long long>(measured.memory.peak_allocated_bytes),
                static_cast<long long>(e.run.memory.peak_allocated_bytes));
    EXPECT_LE(Relative(e.run.memory.peak_allocated_bytes, measured.memory.peak_allocated_bytes), 0.05)
        << c.name;
    EXPECT_EQ(e.run.memory.params_bytes, measured.memory.params_bytes) << c.name;
    EXPECT_EQ(e.run.memory.optimizer_bytes, measured.memory.optimizer_bytes) << c.name;
  }
}

// Under a budget the measured run runs out of, the estimate runs out at the same request.
TEST(EstimateTest, RunsOutOfTheBudgetWhereTheMeasuredRunDoes) {
  config::RunConfig cfg = TinyRun(2, {"strategies.batching.micro_batch_size=8"});
  const train::RunResult unlimited = Train(cfg);
  ASSERT_EQ(unlimited.status, RunStatus::kOk) << unlimited.error;
  // The budget caps the device's bytes, those held before the run (earlier tests') included;
  // the peaks are the run's own, above that baseline.
  const int64_t baseline = unlimited.memory.baseline_bytes;
  cfg.device.memory_budget_bytes = baseline + unlimited.memory.peak_allocated_bytes * 3 / 4;
  const train::RunResult measured = Train(cfg);
  ASSERT_EQ(measured.status, RunStatus::kOom) << measured.error;
  ASSERT_TRUE(measured.oom.has_value());
  const CellEstimate e = estimate::EstimateRun(cfg);
  ASSERT_EQ(e.status, EstimateStatus::kOom) << e.message;
  ASSERT_TRUE(e.run.oom.has_value());
  EXPECT_EQ(e.run.oom->requested_bytes, measured.oom->requested_bytes);
  EXPECT_EQ(e.run.oom->stage, measured.oom->stage);
  EXPECT_EQ(e.peak_stage, measured.oom->stage);
  EXPECT_NE(e.message.find("out of memory"), std::string::npos) << e.message;
  // With the budget at the measured peak, it fits.
  cfg.device.memory_budget_bytes = baseline + unlimited.memory.peak_allocated_bytes;
  EXPECT_EQ(estimate::EstimateRun(cfg).status, EstimateStatus::kFits);
}

// A cell of several ranks is estimated rank by rank, each alone (meta_communicator.h): every
// rank's figures, rank 0's as the cell's (as a run stores them). ZeRO-3 over 2 ranks holds about
// half the model state of 1 rank, and its odd ranks differ from its even ones by the partition's
// padding only. Estimate against measurement: estimate_ranks_test.cc.
TEST(EstimateTest, ACellOfSeveralRanksIsEstimatedRankByRank) {
  config::RunConfig one = TinyRun(1, {"strategies.sharding.plugin=\"zero3\""});
  config::RunConfig two = one;
  two.device.world_size = 2;
  const CellEstimate single = estimate::EstimateRun(one);
  const CellEstimate multi = estimate::EstimateRun(two);
  ASSERT_EQ(single.status, EstimateStatus::kEstimated) << single.message;
  ASSERT_EQ(multi.status, EstimateStatus::kEstimated) << multi.message;
  EXPECT_TRUE(single.ranks.empty());
  ASSERT_EQ(multi.ranks.size(), 2u);
  EXPECT_EQ(multi.world_size, 2);
  EXPECT_EQ(multi.ranks[0].peak_allocated_bytes, multi.run.memory.peak_allocated_bytes);
  for (const estimate::RankEstimate& r : multi.ranks) {
    EXPECT_EQ(r.status, RunStatus::kOk) << r.message;
    EXPECT_GT(r.peak_allocated_bytes, 0);
  }
  const train::MemoryBreakdown& s = single.run.memory;
  const train::MemoryBreakdown& m = multi.run.memory;
  EXPECT_LT(m.optimizer_bytes, s.optimizer_bytes * 6 / 10);
  EXPECT_GT(m.optimizer_bytes, s.optimizer_bytes * 4 / 10);
}

// The verdict is the rank that needs the most: ZeRO-2's ranks draw other rows (with this seed rank
// 1's are longer), so under a budget between two ranks' peaks one fits and the other runs out, and the cell is `oom`
// with that rank's message; rank 0's figures stay the cell's.
TEST(EstimateTest, TheRankThatNeedsTheMostDecidesTheVerdict) {
  config::RunConfig cfg =
      TinyRun(2, {"strategies.sharding.plugin=\"zero2\"", "strategies.batching.seq_len=48",
                  "strategies.batching.micro_batch_size=2", "experiment.seed=7"});
  cfg.device.world_size = 2;
  const CellEstimate unlimited = estimate::EstimateRun(cfg);
  ASSERT_EQ(unlimited.status, EstimateStatus::kEstimated) << unlimited.message;
  ASSERT_EQ(unlimited.ranks.size(), 2u);
  const int64_t low = std::min(unlimited.ranks[0].peak_allocated_bytes,
                               unlimited.ranks[1].peak_allocated_bytes);
  const int64_t high = std::max(unlimited.ranks[0].peak_allocated_bytes,
                                unlimited.ranks[1].peak_allocated_bytes);
  ASSERT_LT(low, high) << "the ranks' peaks should differ";
  const int tight = unlimited.ranks[0].peak_allocated_bytes == high ? 0 : 1;
  cfg.device.memory_budget_bytes = unlimited.run.memory.baseline_bytes + (low + high) / 2;
  const CellEstimate e = estimate::EstimateRun(cfg);
  ASSERT_EQ(e.status, EstimateStatus::kOom) << e.message;
  EXPECT_EQ(e.ranks[tight].status, RunStatus::kOom);
  EXPECT_EQ(e.ranks[1 - tight].status, RunStatus::kOk);
  if (tight > 0) {
    EXPECT_EQ(e.message.rfind("rank 1: ", 0), 0u) << e.message;
  }
  EXPECT_NE(e.message.find("out of memory"), std::string::npos) << e.message;
}

// A CUDA cell whose plugin cannot run on CUDA is refused as `memsweep plan` refuses it on a
// machine with a GPU, not estimated with the plugin's CPU kernel; the same cell for the CPU is.
// precision/fp16 (CUDA only): its forward under the meta device's autocast in float16, its loss
// scaler's three one-element tensors and the scaled loss; the unscale and overflow check work in
// place and an estimate assumes no step overflows. Against bf16 autocast, with sdpa, the same
// activations (2 bytes each): the two estimates differ by the scaler's tensors alone (eager
// attention would not: its softmax runs in fp32 for fp16 scores). On the CPU it is refused with
// plan's message, which names bf16-autocast.
TEST(EstimateTest, AnFp16CellIsEstimatedForCudaAndRefusedForTheCpu) {
  // Read as `memsweep estimate` reads a cell (no GPU needed here, plugins validated on meta).
  const config::RunConfig fp16 =
      TinyRun(3, {"strategies.precision.plugin=\"fp16\"", "strategies.attention.plugin=\"sdpa\""},
              config::ReadFor::kEstimate);
  const config::RunConfig bf16 = TinyRun(
      3, {"strategies.precision.plugin=\"bf16-autocast\"", "strategies.attention.plugin=\"sdpa\""},
      config::ReadFor::kEstimate);
  const CellEstimate half = estimate::EstimateRun(fp16, c10::DeviceType::CUDA);
  ASSERT_EQ(half.status, EstimateStatus::kEstimated) << half.message;
  const CellEstimate brain = estimate::EstimateRun(bf16, c10::DeviceType::CUDA);
  ASSERT_EQ(brain.status, EstimateStatus::kEstimated) << brain.message;
  std::printf("CUDA estimate: fp16 %lld, bf16-autocast %lld bytes\n",
              static_cast<long long>(half.run.memory.peak_allocated_bytes),
              static_cast<long long>(brain.run.memory.peak_allocated_bytes));
  EXPECT_EQ(half.run.memory.params_bytes, brain.run.memory.params_bytes);
  EXPECT_EQ(half.run.memory.optimizer_bytes, brain.run.memory.optimizer_bytes);
  // The scaler's scale, growth tracker and overflow flag (4 bytes each), and the scaled loss:
  // well within three 512-byte CUDA blocks.
  const int64_t scaler_blocks = 3 * 512;
  EXPECT_GE(half.run.memory.peak_allocated_bytes, brain.run.memory.peak_allocated_bytes);
  EXPECT_LE(half.run.memory.peak_allocated_bytes,
            brain.run.memory.peak_allocated_bytes + 2 * scaler_blocks);
  const CellEstimate cpu = estimate::EstimateRun(fp16, c10::DeviceType::CPU);
  EXPECT_EQ(cpu.status, EstimateStatus::kUnsupported);
  EXPECT_NE(cpu.message.find("bf16-autocast"), std::string::npos) << cpu.message;
}

// sdpa's flash backend named on CUDA: LibTorch has no meta form of CUDA's flash kernel, so the
// estimate takes the CPU's, which keeps the same output and log-sum-exp (before, the estimate
// failed in the kernel's dispatch).
TEST(EstimateTest, ACudaCellWithSdpasFlashBackendIsEstimated) {
  const config::RunConfig cfg =
      TinyRun(1, {"strategies.attention.plugin=\"sdpa\"", "strategies.attention.backend=\"flash\"",
                  "strategies.precision.plugin=\"bf16\""});
  const CellEstimate cuda = estimate::EstimateRun(cfg, c10::DeviceType::CUDA);
  EXPECT_EQ(cuda.status, EstimateStatus::kEstimated) << cuda.message;
  EXPECT_GT(cuda.run.memory.peak_allocated_bytes, 0);
}

TEST(EstimateTest, ACudaCellWithAPluginThatRefusesCudaIsUnsupported) {
  const config::RunConfig cfg = TinyRun(1, {"strategies.attention.plugin=\"flash\""});
  const CellEstimate cuda = estimate::EstimateRun(cfg, c10::DeviceType::CUDA);
  EXPECT_EQ(cuda.status, EstimateStatus::kUnsupported);
  EXPECT_NE(cuda.message.find("plugin = \"flash\" cannot run on the CUDA device"),
            std::string::npos)
      << cuda.message;
  EXPECT_EQ(estimate::EstimateRun(cfg).status, EstimateStatus::kEstimated);
}

// A cell of type "auto" stands for the device it took: CUDA where `memsweep run`'s worker took a
// GPU — then with CUDA's caching allocator and cuBLAS workspaces — and, estimated alone, the
// device a run would take on this machine (the CPU without a usable GPU).
TEST(EstimateTest, AnAutoCellIsEstimatedForTheDeviceItTook) {
  const std::string text =
      "[experiment]\nname = \"auto\"\nsteps = 1\nwarmup_steps = 0\nseed = 1\n"
      "[model]\npreset = \"tiny\"\n[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[device]\ntype = \"auto\"\n[strategies.batching]\nseq_len = 32\nmicro_batch_size = 2\n";
  const fs::path file = FreshTempDir("estimate-auto") / "auto.toml";
  std::ofstream(file) << text;
  const experiment::ExperimentPlan plan = experiment::LoadExperimentPlan(
      file.string(), {"data.path=\"" + SourcePath("experiments/data/devils-dictionary.jsonl") + "\""});
  ASSERT_EQ(plan.cells.size(), 1u);
  const CellEstimate cpu = estimate::EstimateCell(plan.cells[0], {});
  estimate::EstimateTarget took_gpu;
  took_gpu.auto_device = "cuda";
  const CellEstimate cuda = estimate::EstimateCell(plan.cells[0], took_gpu);
  ASSERT_EQ(cpu.status, EstimateStatus::kEstimated) << cpu.message;
  ASSERT_EQ(cuda.status, EstimateStatus::kEstimated) << cuda.message;
  const bool gpu_here = env::ProbeCuda().usable();
  EXPECT_EQ(cpu.target, gpu_here ? "cuda" : "cpu");
  EXPECT_EQ(cuda.target, "cuda");
  estimate::EstimateTarget took_cpu;
  took_cpu.auto_device = "cpu";
  const CellEstimate on_cpu = estimate::EstimateCell(plan.cells[0], took_cpu);
  EXPECT_EQ(on_cpu.target, "cpu");
  EXPECT_EQ(on_cpu.blas_workspaces, 0);
  EXPECT_EQ(cuda.blas_workspaces, 2);
}

// Qwen2.5-7B (the bundled config, 7.6 B parameters) with LoRA over a bf16 base: the estimate
// holds its 15 GB base as address space only — the process's resident memory grows by a small
// part of it — and runs no arithmetic.
TEST(EstimateTest, AFullSizeModelNeedsNeitherItsMemoryNorItsArithmetic) {
  config::RunConfig cfg = config::ParseRunConfig(
      "[experiment]\nname = \"qwen7b\"\nsteps = 1\nwarmup_steps = 0\nseed = 1\n"
      "[model]\nconfig = \"models/Qwen2.5-7B\"\nmax_position_embeddings = 512\n"
      "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[strategies.precision]\nplugin = \"bf16\"\n"
      "[strategies.adapter]\nplugin = \"lora\"\nrank = 16\nbase_dtype = \"bf16\"\n"
      "[strategies.batching]\nseq_len = 256\nmicro_batch_size = 1\n",
      SourcePath("experiments/qwen7b.toml"));
  const int64_t rss_before = memory::PeakRssBytes();
  const CellEstimate e = estimate::EstimateRun(cfg);
  const int64_t rss_growth = memory::PeakRssBytes() - rss_before;
  ASSERT_EQ(e.status, EstimateStatus::kEstimated) << e.message;
  // The frozen base alone: 7,615,616,512 parameters in bf16.
  EXPECT_GE(e.run.memory.frozen_params_bytes, 7'000'000'000LL * 2);
  EXPECT_GT(e.run.memory.peak_allocated_bytes, e.run.memory.params_bytes);
  std::printf("Qwen2.5-7B LoRA: peak allocated %lld estimated in %.2f s; peak RSS grew %lld\n",
              static_cast<long long>(e.run.memory.peak_allocated_bytes), e.seconds,
              static_cast<long long>(rss_growth));
  EXPECT_LT(rss_growth, 2'000'000'000LL);
}

}  // namespace
}  // namespace memsweep::testing_support
