// memsweep_bench_loss: the loss slot's three computations on an LM head of a real size
// (docs/loss.md, docs/benchmarks.md): peak memory of the loss computation — from the final
// hidden states to their gradient and the head's — and its time, for loss/full, loss/chunked
// (8 chunks) and loss/fused (Liger's chunk size, and a larger one), in fp32 and bf16.
//
// Goals (issue: the loss slot): fused adds ≤ 10% of the full fp32 logits' bytes to the peak
// beyond the gradients every computation must produce (the hidden states' and the head's), and
// runs at ≥ 0.9x the speed of full. Peaks are measured by memsweep's tracking allocator, relative
// to the inputs (hidden states, weight, targets); variants are interleaved within each round and
// the median time over rounds is printed, with the load average before and after.
//
//   build/release/memsweep_bench_loss [--rounds R] [--tokens N] [--hidden H] [--vocab V]
//                                     [--dtypes 1|2|3]
// Defaults: Llama-3.2-1B's head (hidden 2048, vocab 128,256) over 1 x 4096 tokens; --dtypes 1
// runs fp32 only, 2 bf16 only, 3 (default) both. In bf16, fused at Liger's chunk also runs with
// the head's gradient summed in bf16 (accumulation = "weight", Liger Kernel's own choice).
#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_args.h"
#include "core/env/cpu_gemm.h"
#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"
#include "core/train/summary.h"
#include "loss/common/token_loss.h"
#include "loss/fused/fused_linear_cross_entropy.h"
#include "memsweep/loss.h"

namespace {

using namespace memsweep;
using bench::ArgInt;
using bench::LoadAverage;
using bench::MiB;
using Clock = std::chrono::steady_clock;

// loss/full's and loss/chunked's computations, on the plugins' shared code (the plugins wrap
// exactly these in their LossFn).
at::Tensor Full(const model::LossInputs& in) {
  const at::Tensor logits = model::ApplyLinear(*in.head, in.hidden);
  return plugins::loss::SummedCrossEntropy(logits.reshape({-1, logits.size(-1)}),
                                           in.targets.reshape({-1}), /*upcast=*/true) /
         in.normalizer;
}

at::Tensor Chunked(const model::LossInputs& in, int64_t chunks) {
  const at::Tensor hidden = in.hidden.reshape({-1, in.hidden.size(-1)});
  const at::Tensor targets = in.targets.reshape({-1});
  const int64_t n = hidden.size(0);
  at::Tensor summed;
  for (const plugins::loss::RowRange& r : plugins::loss::ChunkRows(n, (n + chunks - 1) / chunks)) {
    const at::Tensor part = plugins::loss::SummedCrossEntropy(
        model::ApplyLinear(*in.head, hidden.slice(0, r.begin, r.end)),
        targets.slice(0, r.begin, r.end), /*upcast=*/true);
    summed = summed.defined() ? summed + part : part;
  }
  return summed / in.normalizer;
}

struct Measure {
  double seconds = 0;
  int64_t peak_bytes = 0;
};

Measure Once(const std::function<at::Tensor(const model::LossInputs&)>& loss,
             const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets) {
  auto& tracker = memory::TrackingAllocator::Instance();
  model::LinearLayer head;
  head.weight = weight;
  const at::Tensor h = hidden.detach().requires_grad_(true);
  weight.mutable_grad() = at::Tensor();
  tracker.ResetPeak();
  const int64_t before = tracker.AllocatedBytes();
  const auto start = Clock::now();
  {
    const at::Tensor l = loss(model::LossInputs{h, &head, targets, static_cast<double>(targets.numel())});
    l.backward();
  }
  Measure m;
  m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  m.peak_bytes = tracker.PeakAllocatedBytes() - before;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int64_t tokens = ArgInt(argc, argv, "--tokens", 4096);
  const int64_t hidden_size = ArgInt(argc, argv, "--hidden", 2048);
  const int64_t vocab = ArgInt(argc, argv, "--vocab", 128256);
  const int dtypes = ArgInt(argc, argv, "--dtypes", 3);
  env::UseFp32Gemm(env::ChooseFp32Gemm(env::Fp32GemmSetting::kAuto));
  env::UseBf16Gemm(env::ChooseBf16Gemm(env::Bf16GemmSetting::kAuto));
  std::printf("memsweep_bench_loss  threads: %d  %d rounds  %lld tokens, hidden %lld, vocab %lld\n"
              "load average at start: %s\n",
              threads, rounds, static_cast<long long>(tokens), static_cast<long long>(hidden_size),
              static_cast<long long>(vocab), LoadAverage().c_str());
  const double logits_fp32 = 4.0 * static_cast<double>(tokens) * static_cast<double>(vocab);
  const int64_t liger = plugins::loss::LigerChunkTokens(tokens, vocab, hidden_size);
  const int64_t large = std::min<int64_t>(tokens, 1024);
  for (c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    if ((dtypes & (dtype == at::kFloat ? 1 : 2)) == 0) continue;
    at::manual_seed(0);
    const at::Tensor hidden = at::randn({1, tokens, hidden_size}).to(dtype);
    const at::Tensor weight = (at::randn({vocab, hidden_size}) * 0.02).to(dtype).requires_grad_(true);
    const at::Tensor targets = at::randint(0, vocab, {1, tokens}, at::kLong);
    // What every computation must produce: the hidden states' gradient and the head's.
    const double needed = static_cast<double>(hidden.nbytes() + weight.nbytes());
    const auto fused = [](int64_t chunk, bool fp32_accumulation) {
      return [chunk, fp32_accumulation](const model::LossInputs& in) {
        plugins::loss::FusedLossOptions o;
        o.chunk_tokens = chunk;
        o.fp32_accumulation = fp32_accumulation;
        return plugins::loss::FusedLinearCrossEntropy(in, o);
      };
    };
    std::vector<std::pair<std::string, std::function<at::Tensor(const model::LossInputs&)>>>
        variants = {{"full", Full},
                    {"chunked (8)", [](const model::LossInputs& in) { return Chunked(in, 8); }},
                    {"fused (" + std::to_string(liger) + " tokens)", fused(0, true)},
                    {"fused (" + std::to_string(large) + " tokens)", fused(large, true)}};
    if (dtype != at::kFloat) {
      variants.emplace_back("fused (" + std::to_string(liger) + ", bf16 sum)", fused(0, false));
    }
    std::map<std::string, std::vector<double>> seconds;
    std::map<std::string, int64_t> peaks;
    for (int round = 0; round < rounds; ++round) {
      for (size_t k = 0; k < variants.size(); ++k) {
        const auto& [name, fn] = variants[(k + round) % variants.size()];
        const Measure m = Once(fn, hidden, weight, targets);
        seconds[name].push_back(m.seconds);
        peaks[name] = m.peak_bytes;
      }
    }
    const double full_s = train::Percentile(seconds["full"], 0.5);
    std::printf("\n%s (fp32 logits %.1f MiB; gradients every computation produces %.1f MiB)\n",
                dtype == at::kFloat ? "fp32" : "bf16", logits_fp32 / 1048576.0, needed / 1048576.0);
    std::printf("  %-22s %12s %14s %10s %12s\n", "loss", "peak MiB", "beyond grads", "median s",
                "speed/full");
    for (const auto& [name, fn] : variants) {
      const double s = train::Percentile(seconds[name], 0.5);
      const double beyond = static_cast<double>(peaks[name]) - needed;
      std::printf("  %-22s %12.1f %13.1f%% %10.3f %11.2fx\n", name.c_str(), MiB(peaks[name]),
                  100.0 * beyond / logits_fp32, s, full_s / s);
    }
  }
  std::printf("\n(\"beyond grads\": the peak less the gradients, as a share of the fp32 logits; "
              "goal for fused <= 10%%, speed >= 0.9x)\nload average at end: %s\n",
              LoadAverage().c_str());
  return 0;
}
