// optimizer/adamw_8bit and adamw_32bit on a CUDA device (skipped, saying why, without one; run on
// a GPU with --gtest_filter='AdamW8bitGpuTest.*'): the device form against the CPU form from the
// same tensors; paged moments in CUDA unified memory, outside the caching allocator's figures and
// reported as the plugins' step figure; the estimate of a CUDA cell against its run.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "core/estimate/cell_estimate.h"
#include "core/model/llama.h"
#include "gpu/gpu_test_support.h"
#include "optimizer/adamw_8bit/bnb_adamw.h"
#include "optimizer/adamw_8bit/bnb_update.h"
#include "support/optimizer_steps.h"

namespace memsweep::adamw_8bit_gpu_test {
namespace {

using namespace plugins::optimizer;
using AdamW8bitGpuTest = testing_support::GpuTest;

OptimizerStepSpec GpuSpec(int64_t step) { return testing_support::OptimizerTestSpec(step); }

// Three steps from the same tensors on the CPU (bitsandbytes' CPU backend, bit for bit) and on
// CUDA (the chunked device form; CUDA's kernels contract a·x + b into one rounding where the
// CPU's may not): parameters within 1e-5, codes equal but for neighbours in under 1 % of
// elements.
TEST_F(AdamW8bitGpuTest, DeviceFormOnCudaFollowsTheCpuForm) {
  const c10::Device cuda(c10::kCUDA, 0);
  for (const int bits : {8, 32}) {
    torch::manual_seed(5);
    std::vector<at::Tensor> cpu, gpu;
    for (const int64_t n : {int64_t{1000}, int64_t{23100}, int64_t{3 << 20}}) {
      at::Tensor p = at::randn({n}) * 0.1;
      p.mutable_grad() = at::randn({n}) * 0.01;
      at::Tensor q = p.detach().to(cuda);
      q.mutable_grad() = p.grad().to(cuda);
      cpu.push_back(p);
      gpu.push_back(q);
    }
    BnbAdamWOptions options;
    options.bits = bits;
    BnbAdamW on_cpu(cpu, options), on_gpu(gpu, options);
    for (int64_t step = 1; step <= 3; ++step) {
      on_cpu.Step(GpuSpec(step));
      on_gpu.Step(GpuSpec(step));
    }
    for (size_t i = 0; i < cpu.size(); ++i) {
      const double diff = (gpu[i].cpu() - cpu[i]).abs().max().item<double>();
      std::printf("%d-bit, %lld elements: largest parameter difference %.3g\n", bits,
                  static_cast<long long>(cpu[i].numel()), diff);
      EXPECT_LE(diff, 1e-5) << bits << " " << i;
      const BnbAdamW::State& c = on_cpu.StateOf(i);
      const BnbAdamW::State& g = on_gpu.StateOf(i);
      if (!c.EightBit()) continue;
      const auto expect_neighbours = [](const at::Tensor& ours, const at::Tensor& theirs) {
        const at::Tensor a = ours.cpu().to(at::kInt), b = theirs.to(at::kInt);
        EXPECT_LE((a - b).abs().max().item<int>(), 1);
        EXPECT_LE(a.ne(b).sum().item<int64_t>() * 100, a.numel());
      };
      expect_neighbours(g.state1, c.state1);
      expect_neighbours(g.state2, c.state2);
    }
  }
}

// A tiny CUDA cell whose embedding and head reach 100,000 elements, paged and not: the paged
// moments leave the caching allocator's figures (optimizer bytes as BnbTensorStateBytes' device
// part, the rest in <plugin>.paged_state_bytes); the estimate of each cell within 3 % of its run.
TEST_F(AdamW8bitGpuTest, PagedMomentsLeaveTheCachingAllocatorsFigures) {
  for (const std::string plugin : {"adamw_8bit", "adamw_32bit"}) {
    for (const bool paged : {false, true}) {
      const std::string cell = plugin + (paged ? " paged" : "");
      const config::RunConfig cfg = testing_support::GpuRun(
          3, {"strategies.optimizer.plugin=\"" + plugin + "\"",
              std::string("strategies.optimizer.paged=") + (paged ? "true" : "false"),
              "model.vocab_size=2048"});
      const train::RunResult r = testing_support::Train(cfg);
      ASSERT_EQ(r.status, train::RunStatus::kOk) << cell << ": " << r.error;
      BnbAdamWOptions options;
      options.bits = plugin == "adamw_8bit" ? 8 : 32;
      options.paged = paged;
      int64_t device = options.bits == 8 ? kBnbMapBytes + 2 * 65536 : 0, paged_bytes = 0;
      model::LlamaModel model(cfg.model.llama);
      for (const at::Tensor& p : model->parameters()) {
        device += BnbTensorStateBytes(p.numel(), options).device;
        paged_bytes += BnbTensorStateBytes(p.numel(), options).paged;
      }
      EXPECT_EQ(r.memory.optimizer_bytes, device) << cell;
      if (paged) {
        EXPECT_GT(paged_bytes, 0) << cell;
        EXPECT_EQ(r.steps.back().metrics.at(plugin + ".paged_state_bytes"),
                  static_cast<double>(paged_bytes))
            << cell;
      }
      const estimate::CellEstimate e = estimate::EstimateRun(cfg, c10::DeviceType::CUDA);
      ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << cell << ": " << e.message;
      EXPECT_EQ(e.run.memory.optimizer_bytes, r.memory.optimizer_bytes) << cell;
      const double error =
          static_cast<double>(e.run.memory.peak_allocated_bytes - r.memory.peak_allocated_bytes) /
          static_cast<double>(r.memory.peak_allocated_bytes);
      std::printf("%s: peak allocated %lld measured, %lld estimated (%+.3f %%); optimizer %lld; "
                  "paged %lld\n",
                  cell.c_str(), static_cast<long long>(r.memory.peak_allocated_bytes),
                  static_cast<long long>(e.run.memory.peak_allocated_bytes), 100 * error,
                  static_cast<long long>(r.memory.optimizer_bytes),
                  static_cast<long long>(paged_bytes));
      EXPECT_LE(std::abs(error), 0.03) << cell;
    }
  }
}

}  // namespace
}  // namespace memsweep::adamw_8bit_gpu_test
