// memsweep_bench_adapters: what the adapter slot costs and saves (docs/benchmarks.md).
//
// 1. Step time of LoRA (rank 16, every linear layer) against full fine-tuning, through the
//    Trainer, at a shrunk real shape (hidden 1024, 4 layers, GQA 16/4, SwiGLU 2816): the backward
//    skips the frozen weights' gradients (goal: LoRA <= 0.8x full fine-tuning's step time).
// 2. The NF4 product (adapter/qlora's nf4_linear.h) against a dense product over a weight of the
//    same shape in the compute dtype, forward and forward + input gradient, and each one's peak
//    (goal: NF4 >= 0.6x the dense product's speed on the CPU).
// Variants are interleaved within each round; ratios are taken within a round and the median
// over rounds is printed, with the load average before and after.
//
//   build/release/memsweep_bench_adapters [--rounds R] [--steps N] [--tokens T] [--lora 0|1]
// The products run on the GEMM paths a run's [device] defaults pick (core/env/cpu_gemm.h): on a
// CPU without native bf16 products, bf16 goes through fp32 ("upcast"), as in training runs.
#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <cstdio>
#include <string>
#include <vector>

#include "adapter/qlora/nf4.h"
#include "adapter/qlora/nf4_linear.h"
#include "bench_args.h"
#include "core/env/cpu_gemm.h"
#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"
#include "core/train/summary.h"
#include "support/run_configs.h"

namespace {

using namespace memsweep;
using bench::ArgInt;
using bench::LoadAverage;
using bench::MiB;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The median step time (after warm-up) of a run with `adapter` ("none", "lora").
double StepSeconds(const std::string& adapter, int steps, train::MemoryBreakdown* memory) {
  const std::vector<std::string> overrides = {
      "model.preset=small", "model.hidden_size=1024", "model.num_attention_heads=16",
      "model.num_key_value_heads=4", "model.intermediate_size=2816", "model.num_hidden_layers=4",
      "experiment.warmup_steps=1", "strategies.batching.seq_len=256",
      "strategies.batching.micro_batch_size=4", "strategies.batching.padding=max_length",
      "strategies.adapter.plugin=\"" + adapter + "\"",
      adapter == "none" ? "experiment.seed=1" : "strategies.adapter.rank=16"};
  const train::RunResult r = testing_support::Train(testing_support::TinyRun(steps, overrides));
  if (r.status != train::RunStatus::kOk) {
    std::printf("%s failed: %s\n", adapter.c_str(), r.error.c_str());
    std::exit(1);
  }
  *memory = r.memory;
  return r.summary.step_time_median_s;
}

struct Product {
  double forward_s, backward_s;
  int64_t peak_bytes;
};

// Median-free single timing of `reps` forward (+ input gradient) passes of `fn`.
Product Time(const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x, int reps) {
  auto& tracker = memory::TrackingAllocator::Instance();
  Product p{};
  {
    at::NoGradGuard no_grad;
    fn(x);  // warm-up
    const auto start = Clock::now();
    for (int i = 0; i < reps; ++i) fn(x);
    p.forward_s = Seconds(start) / reps;
  }
  const at::Tensor input = x.detach().requires_grad_(true);
  tracker.ResetPeak();
  const int64_t before = tracker.AllocatedBytes();
  const auto start = Clock::now();
  for (int i = 0; i < reps; ++i) {
    const at::Tensor y = fn(input);
    torch::autograd::grad({y}, {input}, {at::ones_like(y)});
  }
  p.backward_s = Seconds(start) / reps;
  p.peak_bytes = tracker.PeakAllocatedBytes() - before;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int steps = ArgInt(argc, argv, "--steps", 4);
  const int tokens = ArgInt(argc, argv, "--tokens", 1024);
  std::printf("memsweep_bench_adapters  threads: %d  %d rounds\nload average at start: %s\n",
              threads, rounds, LoadAverage().c_str());

  // 1. LoRA against full fine-tuning.
  std::vector<double> full_s, lora_s, ratio;
  train::MemoryBreakdown full_mem, lora_mem;
  const int lora_rounds = ArgInt(argc, argv, "--lora", 1) != 0 ? rounds : 0;
  for (int round = 0; round < lora_rounds; ++round) {
    const bool lora_first = round % 2 == 1;
    double f = 0, l = 0;
    if (lora_first) l = StepSeconds("lora", steps, &lora_mem);
    f = StepSeconds("none", steps, &full_mem);
    if (!lora_first) l = StepSeconds("lora", steps, &lora_mem);
    full_s.push_back(f);
    lora_s.push_back(l);
    ratio.push_back(l / f);
    std::printf("round %d: full %.3f s/step, LoRA r=16 %.3f s/step (%.2fx)\n", round + 1, f, l, l / f);
  }
  if (lora_rounds > 0) std::printf("\nstep time (hidden 1024, 4 layers, 4 x 256 tokens), median of %d rounds:\n"
              "  full fine-tuning %.3f s, LoRA r=16 %.3f s: LoRA/full = %.2fx (goal <= 0.8x)\n"
              "  model state: full %.1f MiB (grads %.1f, optimizer %.1f); LoRA %.1f MiB "
              "(frozen %.1f, trainable %.2f, grads %.2f, optimizer %.2f)\n",
              rounds, train::Percentile(full_s, 0.5), train::Percentile(lora_s, 0.5),
              train::Percentile(ratio, 0.5),
              MiB(full_mem.params_bytes + full_mem.grads_bytes + full_mem.optimizer_bytes),
              MiB(full_mem.grads_bytes), MiB(full_mem.optimizer_bytes),
              MiB(lora_mem.params_bytes + lora_mem.grads_bytes + lora_mem.optimizer_bytes),
              MiB(lora_mem.frozen_params_bytes), MiB(lora_mem.trainable_params_bytes),
              MiB(lora_mem.grads_bytes), MiB(lora_mem.optimizer_bytes));

  // 2. The NF4 product against the dense one, per compute dtype, on a run's default GEMM paths.
  env::UseFp32Gemm(env::ChooseFp32Gemm(env::Fp32GemmSetting::kAuto));
  env::UseBf16Gemm(env::ChooseBf16Gemm(env::Bf16GemmSetting::kAuto));
  const int64_t out = 4096, in = 1024;
  at::manual_seed(0);
  const at::Tensor w = at::randn({out, in}) * 0.02;
  const plugins::adapter::Nf4Weight q = plugins::adapter::QuantizeNf4(w);
  for (c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    const at::Tensor dense = plugins::adapter::DequantizeNf4(q, dtype);
    const at::Tensor x = at::randn({tokens, in}).to(dtype);
    std::vector<double> fwd_ratio, bwd_ratio;
    Product d{}, n{};
    for (int round = 0; round < rounds; ++round) {
      d = Time([&](const at::Tensor& t) { return at::linear(t, dense); }, x, 5);
      n = Time([&](const at::Tensor& t) { return plugins::adapter::Nf4Linear(t, q, dtype); }, x, 5);
      fwd_ratio.push_back(d.forward_s / n.forward_s);
      bwd_ratio.push_back(d.backward_s / n.backward_s);
    }
    std::printf("\nNF4 product %s, x [%d, %lld] by W [%lld, %lld]ᵀ (median of %d rounds):\n"
                "  forward: dense %.2f ms, NF4 %.2f ms: NF4 speed = %.2fx dense (goal >= 0.6x)\n"
                "  forward + input gradient: dense %.2f ms, NF4 %.2f ms: %.2fx\n"
                "  peak beyond the inputs: dense %.2f MiB (+ its weight %.2f MiB held), NF4 "
                "%.2f MiB (codes and absmax %.2f MiB held)\n",
                dtype == at::kFloat ? "fp32" : "bf16", tokens, static_cast<long long>(in),
                static_cast<long long>(out), static_cast<long long>(in), rounds,
                1e3 * d.forward_s, 1e3 * n.forward_s, train::Percentile(fwd_ratio, 0.5),
                1e3 * d.backward_s, 1e3 * n.backward_s, train::Percentile(bwd_ratio, 0.5),
                MiB(d.peak_bytes), MiB(dense.numel() * dense.element_size()), MiB(n.peak_bytes),
                MiB(q.codes.numel() + q.absmax_codes.numel() + 4 * q.absmax_scales.numel() + 4));
  }
  std::printf("\nload average at end: %s\n", LoadAverage().c_str());
  return 0;
}
