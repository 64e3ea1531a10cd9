// memsweep_bench_checkpointing: activation memory and step time of the checkpointing plugins
// (none, full, selective, every_k) on the `small` preset at a long sequence (docs/benchmarks.md).
// Every variant trains through the Trainer with the same batches; variants are interleaved
// within each round so that load from other tenants spreads over all of them. Memory figures are
// deterministic; the time figure is the median over rounds of each run's median step time.
//
//   build/release/memsweep_bench_checkpointing [--steps N] [--rounds R] [--seq-len T]
//                                              [--batch B] [--k K]
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"
#include "core/train/summary.h"
#include "core/train/trainer.h"
#include "support/run_configs.h"
#include "bench_args.h"

namespace {

using memsweep::bench::ArgInt;
using memsweep::bench::MiB;

using namespace memsweep;

struct Variant {
  std::string name;
  std::vector<std::string> overrides;
  int64_t activations_bytes = 0;
  int64_t saved_activations_bytes = 0;
  std::vector<double> step_medians;  // one per round
  std::vector<double> losses;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int steps = ArgInt(argc, argv, "--steps", 4);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int seq_len = ArgInt(argc, argv, "--seq-len", 1024);
  const int batch = ArgInt(argc, argv, "--batch", 1);
  const int k = ArgInt(argc, argv, "--k", 2);
  std::printf("memsweep_bench_checkpointing  threads: %d  small preset, fp32, eager attention, "
              "%d x %d tokens per step (padded to max_length), %d steps (1 warm-up), %d rounds\n",
              threads, batch, seq_len, steps, rounds);

  const std::vector<std::string> common = {
      "model.preset=small",
      "strategies.batching.seq_len=" + std::to_string(seq_len),
      "strategies.batching.micro_batch_size=" + std::to_string(batch),
      "strategies.batching.padding=max_length",
  };
  std::vector<Variant> variants = {
      {"none", {"strategies.checkpointing.plugin=\"none\""}},
      {"full", {"strategies.checkpointing.plugin=\"full\""}},
      {"selective", {"strategies.checkpointing.plugin=\"selective\""}},
      {"every_k k=" + std::to_string(k),
       {"strategies.checkpointing.plugin=\"every_k\"",
        "strategies.checkpointing.k=" + std::to_string(k)}},
  };

  for (int round = 0; round < rounds; ++round) {
    std::printf("round %d:", round + 1);
    // Rotate the order each round: no variant always runs first (or right after another).
    for (size_t i = 0; i < variants.size(); ++i) {
      Variant& v = variants[(i + static_cast<size_t>(round)) % variants.size()];
      std::vector<std::string> overrides = common;
      overrides.insert(overrides.end(), v.overrides.begin(), v.overrides.end());
      const train::RunResult r = testing_support::Train(testing_support::TinyRun(steps, overrides));
      if (r.status != train::RunStatus::kOk) {
        std::printf("\n%s failed: %s\n", v.name.c_str(), r.error.c_str());
        return 1;
      }
      v.activations_bytes = r.memory.activations_bytes;
      v.saved_activations_bytes = r.memory.saved_activations_bytes;
      v.step_medians.push_back(r.summary.step_time_median_s);
      v.losses.clear();
      for (const auto& s : r.steps) v.losses.push_back(s.loss);
      std::printf("  %s %.0f ms", v.name.c_str(), 1000.0 * r.summary.step_time_median_s);
    }
    std::printf("\n");
  }

  const Variant& none = variants[0];
  const double none_time = train::Percentile(none.step_medians, 0.5);
  std::printf("\n%-12s %14s %10s %14s %10s %12s %10s %s\n", "variant", "activations",
              "vs none", "saved/fwd", "vs none", "step median", "overhead", "losses == none");
  for (const Variant& v : variants) {
    const double time = train::Percentile(v.step_medians, 0.5);
    std::printf("%-12s %10.1f MiB %+9.1f%% %10.1f MiB %+9.1f%% %9.0f ms %+9.1f%% %s\n",
                v.name.c_str(), MiB(v.activations_bytes),
                100.0 * (static_cast<double>(v.activations_bytes) / none.activations_bytes - 1),
                MiB(v.saved_activations_bytes),
                100.0 * (static_cast<double>(v.saved_activations_bytes) /
                             none.saved_activations_bytes - 1),
                1000.0 * time, 100.0 * (time / none_time - 1),
                v.losses == none.losses ? "yes" : "NO");
  }
  std::printf("\ngoals: full >= 70%% lower activation memory at <= 35%% overhead; selective >= 50%% "
              "lower at <= 10%% overhead\n");
  return 0;
}
