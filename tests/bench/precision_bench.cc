// memsweep_bench_precision: throughput and activation memory of the precision plugins (fp32,
// bf16-autocast, bf16) on the `small` preset (docs/benchmarks.md). Every variant trains through
// the Trainer with the same seed and batches; variants are interleaved within each round, their
// order rotating, so that load from other tenants spreads over all of them. Throughput ratios
// are taken within a round and the median over rounds is reported; memory figures are
// deterministic. The load average is printed before and after.
//
//   build/release/memsweep_bench_precision [--steps N] [--rounds R] [--seq-len T] [--batch B]
//                                          [--native 0|1]
// Products run on the paths [device] fp32_gemm and gemm = "auto" pick (core/env/cpu_gemm.h);
// bf16-autocast also runs with the bf16 path auto did not pick as a variant of its own: upcast
// where auto picks native, else native with --native 1 (default; leave it out on CPUs without
// native bf16, where it is ~100x slower).
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/env/cpu_gemm.h"
#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"
#include "core/train/summary.h"
#include "core/train/trainer.h"
#include "support/run_configs.h"
#include "bench_args.h"

namespace {

using memsweep::bench::ArgInt;
using memsweep::bench::MiB;
using memsweep::bench::LoadAverage;

using namespace memsweep;

// Seconds spent in each stage over the measured steps, from the timeline: a stage lasts from the
// previous point to its own (the stages of a step follow each other without gaps).
std::map<std::string, double> StageSeconds(const train::RunResult& r, int64_t warmup_steps) {
  std::map<std::string, double> seconds;
  for (size_t i = 1; i < r.timeline.size(); ++i) {
    const train::TimelinePoint& p = r.timeline[i];
    if (p.step < warmup_steps) continue;
    seconds[p.stage] += p.seconds - r.timeline[i - 1].seconds;
  }
  return seconds;
}

struct Variant {
  std::string plugin;
  std::string gemm = "auto";  // [device] gemm
  std::string Label() const { return gemm == "auto" ? plugin : plugin + " (" + gemm + ")"; }
  std::string bf16_gemm;  // the paths the run used (environment.bf16_gemm, .fp32_gemm)
  std::string fp32_gemm;
  train::MemoryBreakdown memory;
  std::vector<double> tokens_per_s;   // one per round
  std::vector<double> ratio_vs_fp32;  // one per round
  std::map<std::string, std::vector<double>> stage_ms_per_step;
  std::vector<double> losses;
  double mfu = 0.0;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int steps = ArgInt(argc, argv, "--steps", 4);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int seq_len = ArgInt(argc, argv, "--seq-len", 256);
  const int batch = ArgInt(argc, argv, "--batch", 4);
  constexpr int kWarmupSteps = 1;
  std::printf("memsweep_bench_precision  threads: %d  small preset, eager attention, no "
              "checkpointing, %d x %d tokens per step (padded to max_length), %d steps "
              "(%d warm-up), %d rounds\nload average at start: %s\n",
              threads, batch, seq_len, steps, kWarmupSteps, rounds, LoadAverage().c_str());

  const std::vector<std::string> common = {
      "model.preset=small",
      "experiment.warmup_steps=" + std::to_string(kWarmupSteps),
      "strategies.batching.seq_len=" + std::to_string(seq_len),
      "strategies.batching.micro_batch_size=" + std::to_string(batch),
      "strategies.batching.padding=max_length",
  };
  std::vector<Variant> variants = {{"fp32"}, {"bf16-autocast"}, {"bf16"}};
  // The bf16 path auto did not take, as a variant of its own.
  const bool auto_native = env::ChooseBf16Gemm(env::Bf16GemmSetting::kAuto) == env::Bf16Gemm::kNative;
  if (ArgInt(argc, argv, "--native", 1) != 0 || auto_native) {
    variants.push_back({"bf16-autocast", auto_native ? "upcast" : "native"});
  }

  for (int round = 0; round < rounds; ++round) {
    std::printf("round %d:", round + 1);
    std::map<std::string, double> round_tps;
    for (size_t i = 0; i < variants.size(); ++i) {
      Variant& v = variants[(i + static_cast<size_t>(round)) % variants.size()];
      std::vector<std::string> overrides = common;
      overrides.push_back("strategies.precision.plugin=\"" + v.plugin + "\"");
      overrides.push_back("device.gemm=\"" + v.gemm + "\"");
      const train::RunResult r = testing_support::Train(testing_support::TinyRun(steps, overrides));
      if (r.status != train::RunStatus::kOk) {
        std::printf("\n%s failed: %s\n", v.plugin.c_str(), r.error.c_str());
        return 1;
      }
      v.memory = r.memory;
      v.mfu = r.summary.mfu;
      v.tokens_per_s.push_back(r.summary.tokens_per_s);
      round_tps[v.Label()] = r.summary.tokens_per_s;
      v.bf16_gemm = r.environment.bf16_gemm;
      v.fp32_gemm = r.environment.fp32_gemm;
      const double measured = static_cast<double>(r.summary.measured_steps);
      for (const auto& [stage, s] : StageSeconds(r, kWarmupSteps)) {
        v.stage_ms_per_step[stage].push_back(1000.0 * s / measured);
      }
      v.losses = testing_support::Losses(r);
      std::printf("  %s %.0f tok/s", v.Label().c_str(), r.summary.tokens_per_s);
    }
    for (Variant& v : variants) v.ratio_vs_fp32.push_back(round_tps[v.Label()] / round_tps["fp32"]);
    std::printf("\n");
  }

  const Variant& fp32 = variants[0];
  std::printf("\nload average at end: %s\n", LoadAverage().c_str());
  std::printf("\n%-24s %10s %12s %7s %9s %9s %9s %12s %9s %12s %9s\n", "variant", "tokens/s",
              "vs fp32", "MFU", "fwd ms", "bwd ms", "optim ms", "activations", "vs fp32",
              "saved/fwd", "vs fp32");
  for (const Variant& v : variants) {
    auto stage = [&](const char* name) {
      auto it = v.stage_ms_per_step.find(name);
      return it == v.stage_ms_per_step.end() ? 0.0 : train::Percentile(it->second, 0.5);
    };
    std::printf("%-24s %10.0f %11.2fx %6.1f%% %9.0f %9.0f %9.0f %8.1f MiB %8.2fx %8.1f MiB %8.2fx\n",
                (v.Label() + " [" + v.fp32_gemm + "/" + v.bf16_gemm + "]").c_str(),
                train::Percentile(v.tokens_per_s, 0.5),
                train::Percentile(v.ratio_vs_fp32, 0.5), 100.0 * v.mfu, stage("forward"),
                stage("backward"), stage("optimizer_step"), MiB(v.memory.activations_bytes),
                static_cast<double>(v.memory.activations_bytes) / fp32.memory.activations_bytes,
                MiB(v.memory.saved_activations_bytes),
                static_cast<double>(v.memory.saved_activations_bytes) /
                    fp32.memory.saved_activations_bytes);
  }
  std::printf("\n%-24s %12s %12s %12s %14s %14s   losses\n", "variant", "params", "grads",
              "optimizer", "peak allocated", "peak RSS");
  for (const Variant& v : variants) {
    std::printf("%-24s %8.1f MiB %8.1f MiB %8.1f MiB %10.1f MiB %10.1f MiB  ", v.Label().c_str(),
                MiB(v.memory.params_bytes), MiB(v.memory.grads_bytes),
                MiB(v.memory.optimizer_bytes), MiB(v.memory.peak_allocated_bytes),
                MiB(v.memory.peak_rss_bytes));
    for (double loss : v.losses) std::printf(" %.4f", loss);
    std::printf("\n");
  }
  std::printf("\n[fp32/bf16] = the fp32 and bf16 GEMM paths the run used (core/env/cpu_gemm.h)\n"
              "goals: issue 4, bf16-autocast vs fp32: tokens/s >= 2x, activation memory <= 0.6x;"
              " issue 12: bf16-autocast tokens/s >= 0.9x fp32 on any CPU\n");
  return 0;
}
