// memsweep_bench_core: the figures of the foundation (docs/benchmarks.md).
//   1. the machine's fp32 peak (register-only FMA probe)
//   2. fp32 and bf16 GEMM (at::mm, LibTorch's own MKL/oneDNN) at the small preset's shapes, as a
//      share of that peak and of the calibrated GEMM rate that MFU divides by
//   3. training-step throughput and MFU of the `small` preset (fp32)
//   4. memsweep's loop against a bare LibTorch loop doing the same work (overhead)
//
//   build/release/memsweep_bench_core [--steps N] [--rounds R] [--seq-len T] [--batch B]
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bare_loop.h"
#include "core/env/environment.h"
#include "core/env/gemm_calibration.h"
#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"
#include "core/train/summary.h"
#include "core/train/trainer.h"
#include "fma_peak.h"
#include "support/run_configs.h"
#include "bench_args.h"

namespace {

using memsweep::bench::ArgInt;

using namespace memsweep;

double GemmFlops(int64_t m, int64_t k, int64_t n, int repeats, c10::ScalarType dtype) {
  const at::Tensor a = at::randn({m, k}).to(dtype), b = at::randn({k, n}).to(dtype);
  at::Tensor c = at::mm(a, b);
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                              .count());
  }
  return 2.0 * m * k * n / best;
}

double Median(std::vector<double> v) { return train::Percentile(std::move(v), 0.5); }

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int steps = ArgInt(argc, argv, "--steps", 8);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int seq_len = ArgInt(argc, argv, "--seq-len", 256);
  const int batch = ArgInt(argc, argv, "--batch", 4);
  const env::EnvironmentInfo info = env::DescribeEnvironment();
  std::printf("memsweep_bench_core  cpu: %s  threads: %d  LibTorch %s, ATen CPU kernels %s, "
              "BLAS %s\n\n", info.cpu_model.c_str(), threads, info.torch_version.c_str(),
              info.cpu_capability.c_str(), info.blas_kind.c_str());

  // 1. peak: the best of several probes spread over the GEMM measurements, since other tenants
  // of a shared machine can slow any single probe down.
  bench::FmaPeak peak = bench::MeasureFmaPeak(threads);
  auto reprobe = [&peak, threads] {
    const bench::FmaPeak again = bench::MeasureFmaPeak(threads);
    if (again.flops > peak.flops) peak = again;
  };

  // 2. GEMM
  struct Shape { int64_t m, k, n; const char* what; };
  const Shape shapes[] = {{4096, 4096, 4096, "square 4096"},
                          {2048, 2048, 2048, "square 2048"},
                          {1024, 512, 1376, "small preset MLP up (1024 tokens)"},
                          {1024, 1376, 512, "small preset MLP down"},
                          {1024, 512, 8192, "small preset LM head"}};
  std::printf("[gemm] at::mm in fp32 and bf16 (best of 8)\n");
  const double calib_fp32 = env::CachedGemmPeakFlops(at::kFloat);
  const double calib_bf16 = env::CachedGemmPeakFlops(at::kBFloat16);
  struct Row { const Shape* shape; double fp32, bf16; };
  std::vector<Row> rows;
  for (const Shape& s : shapes) {
    reprobe();
    const double fp32 = GemmFlops(s.m, s.k, s.n, 8, at::kFloat);
    const double bf16 = GemmFlops(s.m, s.k, s.n, 8, at::kBFloat16);
    rows.push_back({&s, fp32, bf16});
  }
  reprobe();
  std::printf("  fp32 peak, register-only FMA probe (%s, %d threads, best of %zu probes): "
              "%.1f GFLOP/s\n", peak.isa.c_str(), threads, rows.size() + 2, peak.flops / 1e9);
  std::printf("  calibrated GEMM rate (at::mm 1536^3, best of 4; MFU's denominator): fp32 %.1f, "
              "bf16 %.1f GFLOP/s\n", calib_fp32 / 1e9, calib_bf16 / 1e9);
  std::printf("  %-36s %10s %8s %8s %10s %8s %9s\n", "shape", "fp32 GF/s", "% peak", "% calib",
              "bf16 GF/s", "% calib", "bf16/fp32");
  for (const Row& r : rows) {
    std::printf("  %-36s %10.1f %7.1f%% %7.1f%% %10.1f %7.1f%% %9.2f\n", r.shape->what,
                r.fp32 / 1e9, 100 * r.fp32 / peak.flops, 100 * r.fp32 / calib_fp32, r.bf16 / 1e9,
                100 * r.bf16 / calib_bf16, r.bf16 / r.fp32);
  }
  std::printf("\n");

  // 3 + 4. training step, memsweep loop vs bare loop, interleaved rounds on identical batches,
  // in fp32 and under bf16 autocast. max_length padding: identical work every step.
  for (const bool bf16 : {false, true}) {
    std::vector<std::string> overrides = {
        "model.preset=small", "experiment.warmup_steps=2",
        "device.threads=" + std::to_string(threads),
        "strategies.batching.seq_len=" + std::to_string(seq_len),
        "strategies.batching.micro_batch_size=" + std::to_string(batch),
        "strategies.batching.padding=max_length"};
    if (bf16) overrides.push_back("strategies.precision.plugin=\"bf16-autocast\"");
    const config::RunConfig cfg = testing_support::TinyRun(steps, overrides);
    std::printf("[train] small preset (%lld parameters), %s, %d x %d tokens per step, %d steps "
                "(2 warm-up), %d rounds\n",
                static_cast<long long>(cfg.model.llama.ParameterCount()),
                bf16 ? "bf16-autocast" : "fp32", batch, seq_len, steps, rounds);
    std::vector<double> ratios, min_ratios;
    for (int round = 0; round < rounds; ++round) {
      // Alternate which loop goes first (ABBA...), so drifting machine load hits both alike.
      train::RunResult run;
      bench::BareLoopResult bare;
      if (round % 2 == 0) {
        run = testing_support::Train(cfg);
        bare = bench::RunBareLoop(cfg, bf16);
      } else {
        bare = bench::RunBareLoop(cfg, bf16);
        run = testing_support::Train(cfg);
      }
      std::vector<double> ms_steps;
      for (size_t i = 2; i < run.steps.size(); ++i) ms_steps.push_back(run.steps[i].seconds);
      std::vector<double> bare_steps(bare.step_seconds.begin() + 2, bare.step_seconds.end());
      const double ratio = Median(ms_steps) / Median(bare_steps);
      ratios.push_back(ratio);
      min_ratios.push_back(*std::min_element(ms_steps.begin(), ms_steps.end()) /
                           *std::min_element(bare_steps.begin(), bare_steps.end()));
      // Both loops train on the same batches: the same real (unpadded) tokens per step, so the
      // bare loop's tokens/s is memsweep's scaled by the ratio of median step times.
      const double bare_tokens_per_s = run.summary.tokens_per_s * ratio;
      std::printf("  round %d: memsweep %.1f tokens/s, MFU %.1f%% (vs GEMM calibration %.1f GF/s), "
                  "peak %.1f MiB | bare %.1f tokens/s | step median memsweep %.1f ms, bare %.1f "
                  "ms, overhead %+.2f%% | final loss memsweep %.4f bare %.4f\n",
                  round + 1, run.summary.tokens_per_s, 100 * run.summary.mfu,
                  run.summary.peak_flops / 1e9, run.memory.peak_allocated_bytes / 1048576.0,
                  bare_tokens_per_s, Median(ms_steps) * 1e3,
                  Median(bare_steps) * 1e3, 100 * (ratio - 1), run.summary.final_loss,
                  bare.losses.back());
    }
    std::printf("  loop overhead, median of per-round median-step ratios: %+.2f%%; of "
                "fastest-step ratios: %+.2f%%  (goal <= 1%%)\n\n",
                100 * (Median(ratios) - 1), 100 * (Median(min_ratios) - 1));
  }
  return 0;
}
