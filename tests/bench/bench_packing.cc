// memsweep_bench_packing: throughput and memory of packing/pack against packing/none on the
// bundled corpus (long-tailed lengths), `small` preset, fp32, eager attention (docs/benchmarks.md).
//
// The gain of packing comes from computing fewer padding positions per real token. If a step's
// time were proportional to the positions it computes, pack's tokens/s over none's would be
//   ideal = (1 - padding(pack)) / (1 - padding(none))
// with the padding of the steps tokens/s is measured over (the warm-up step excluded, as the
// runner excludes it from tokens/s; the run's padding_fraction counts every step). The benchmark
// measures the gain and reports it as a share of that ideal (goal >= 90%); with the same positions
// per step that share is none's time per step over pack's. `none` runs twice: padded to seq_len
// (max_length: every step computes the same positions as pack's, the cleanest comparison) and
// padded to the longest row of each micro-batch (the default). Variants are interleaved and their
// order rotates each round; the figure per variant is the median over rounds of its tokens/s.
//
//   build/release/memsweep_bench_packing [--steps N] [--rounds R] [--seq-len T] [--batch B]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
using memsweep::bench::LoadAverage;

using namespace memsweep;

struct Variant {
  std::string name;
  std::vector<std::string> overrides;
  std::vector<double> tokens_per_s;  // one per round
  std::vector<double> step_seconds;  // one per round: mean over its measured steps
  double padding_fraction = 0.0;           // every step (the run's figure)
  double measured_padding_fraction = 0.0;  // the steps tokens/s is measured over
  int64_t peak_allocated_bytes = 0;
  int64_t activations_bytes = 0;
  double tokens_per_step = 0.0;  // real tokens, measured steps
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int steps = ArgInt(argc, argv, "--steps", 6);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int seq_len = ArgInt(argc, argv, "--seq-len", 256);
  const int batch = ArgInt(argc, argv, "--batch", 4);
  std::printf("memsweep_bench_packing  threads: %d  small preset, fp32, eager attention, "
              "devils-dictionary.jsonl, %d rows x %d positions per step, %d steps (1 warm-up), "
              "%d rounds\nload average at start: %s\n",
              threads, batch, seq_len, steps, rounds, LoadAverage().c_str());

  const std::vector<std::string> common = {
      "model.preset=small",
      "strategies.batching.seq_len=" + std::to_string(seq_len),
      "strategies.batching.micro_batch_size=" + std::to_string(batch),
  };
  std::vector<Variant> variants = {
      {"none max_length",
       {"strategies.packing.plugin=\"none\"", "strategies.batching.padding=\"max_length\""}},
      {"none longest",
       {"strategies.packing.plugin=\"none\"", "strategies.batching.padding=\"longest\""}},
      {"pack", {"strategies.packing.plugin=\"pack\"", "strategies.batching.padding=\"longest\""}},
  };

  for (int round = 0; round < rounds; ++round) {
    std::printf("round %d:", round + 1);
    for (size_t i = 0; i < variants.size(); ++i) {
      Variant& v = variants[(i + static_cast<size_t>(round)) % variants.size()];
      std::vector<std::string> overrides = common;
      overrides.insert(overrides.end(), v.overrides.begin(), v.overrides.end());
      const train::RunResult r = testing_support::Train(testing_support::TinyRun(steps, overrides));
      if (r.status != train::RunStatus::kOk) {
        std::printf("\n%s failed: %s\n", v.name.c_str(), r.error.c_str());
        return 1;
      }
      v.tokens_per_s.push_back(r.summary.tokens_per_s);
      v.padding_fraction = r.summary.padding_fraction;
      // The steps the runner measures tokens/s over: the last measured_steps of the run.
      const size_t first = r.steps.size() - static_cast<size_t>(r.summary.measured_steps);
      double measured_tokens = 0, measured_positions = 0, measured_seconds = 0;
      for (size_t i = first; i < r.steps.size(); ++i) {
        measured_tokens += static_cast<double>(r.steps[i].tokens);
        measured_positions += static_cast<double>(r.steps[i].positions);
        measured_seconds += r.steps[i].seconds;
      }
      v.measured_padding_fraction = 1.0 - measured_tokens / measured_positions;
      v.step_seconds.push_back(measured_seconds / static_cast<double>(r.steps.size() - first));
      v.peak_allocated_bytes = r.memory.peak_allocated_bytes;
      v.activations_bytes = r.memory.activations_bytes;
      v.tokens_per_step = measured_tokens / static_cast<double>(r.steps.size() - first);
      std::printf("  %s %.0f tok/s", v.name.c_str(), r.summary.tokens_per_s);
      std::fflush(stdout);  // progress within a round (stdout is line-buffered)
    }
    std::printf("  (load %s)\n", LoadAverage().c_str());
  }

  const Variant& pack = variants[2];
  const double pack_rate = train::Percentile(pack.tokens_per_s, 0.5);
  std::printf("\n%-16s %9s %9s %12s %11s %8s %10s %10s %12s %12s\n", "variant", "padding",
              "measured", "real tok/step", "tokens/s", "s/step", "peak", "activ.", "pack gain",
              "% of ideal");
  for (const Variant& v : variants) {
    const double rate = train::Percentile(v.tokens_per_s, 0.5);
    std::printf("%-16s %8.1f%% %8.1f%% %12.0f %11.0f %8.3f %6.1f MiB %6.1f MiB", v.name.c_str(),
                100.0 * v.padding_fraction, 100.0 * v.measured_padding_fraction,
                v.tokens_per_step, rate, train::Percentile(v.step_seconds, 0.5),
                MiB(v.peak_allocated_bytes), MiB(v.activations_bytes));
    if (&v == &pack) {
      std::printf("\n");
      continue;
    }
    const double gain = pack_rate / rate;
    const double ideal =
        (1.0 - pack.measured_padding_fraction) / (1.0 - v.measured_padding_fraction);
    std::printf("   x%.3f (ideal x%.3f) %9.1f%%\n", gain, ideal, 100.0 * gain / ideal);
  }
  std::printf("\npadding: over every step (the run's padding_fraction); measured: over the "
              "steps tokens/s is measured over (warm-up excluded)\n"
              "s/step: median over rounds of the mean time of a measured step\n"
              "goal: pack's tokens/s gain over none >= 90%% of the ideal "
              "(1 - measured padding(pack)) / (1 - measured padding(none))\n"
              "load average at end: %s\n",
              LoadAverage().c_str());
  return 0;
}
