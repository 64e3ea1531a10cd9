// memsweep_bench_attention: time and peak memory of the attention plugins' kernels — eager,
// chunked, flash — and of ATen's own CPU attention (at::scaled_dot_product_attention, which has a
// flash path on CPU in LibTorch 2.x) on one attention call, forward + backward
// (docs/benchmarks.md).
// Shape as issue 5 sets it: b=4, heads=8, head_dim=64, causal, s = 512 ... 4096, fp32 and bf16.
// Variants run interleaved within each round (the order rotates), so load from other tenants of
// a shared machine spreads over all of them; ratios are medians of per-round ratios.
//
//   build/release/memsweep_bench_attention [--rounds R] [--max-seq S] [--eager-max-seq S]
//                                          [--chunk-block N] [--q-tile N] [--k-tile N]
//                                          [--auto-gemm 0|1]
// --auto-gemm 1 runs LibTorch's products (eager's, chunked's, the calibration's) on the paths a
// memsweep run takes by default (core/env/cpu_gemm.h: [device] fp32_gemm and gemm = "auto");
// 0 (default) leaves LibTorch's own kernels, as the figures before those paths were taken.
#include <ATen/ATen.h>
#include <ATen/Version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "attention/chunked/chunked_attention.h"
#include "attention/eager/eager_attention.h"
#include "attention/flash/flash_attention.h"
#include "attention/flash/flash_tile_ops.h"
#include "core/env/cpu_gemm.h"
#include "core/env/gemm_calibration.h"
#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"
#include "bench_args.h"

namespace {

using memsweep::bench::ArgInt;
using memsweep::bench::MiB;
using memsweep::bench::LoadAverage;

using namespace memsweep;

constexpr int64_t kBatch = 4, kHeads = 8, kHeadDim = 64;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Variant {
  std::string name;
  model::AttentionFn fn;
};

struct Measurement {
  double seconds = 0.0;
  int64_t peak_bytes = 0;  // tracked bytes above what existed before the call (q, k, v, dO)
};

// One forward + backward of `fn` on fresh leaves; q, k, v in [B, T, H, D] storage viewed as
// [B, H, T, D], as the model passes them.
Measurement RunOnce(const model::AttentionFn& fn, int64_t seq, c10::ScalarType dtype) {
  auto leaf = [&] {
    return at::randn({kBatch, seq, kHeads, kHeadDim}).to(dtype).transpose(1, 2).requires_grad_(true);
  };
  at::Tensor q = leaf(), k = leaf(), v = leaf();
  const at::Tensor grad_out = at::randn({kBatch, kHeads, seq, kHeadDim}).to(dtype);
  auto& tracker = memory::TrackingAllocator::Instance();
  const int64_t before = tracker.AllocatedBytes();
  tracker.ResetWindowPeak();
  const auto start = std::chrono::steady_clock::now();
  {
    const at::Tensor out = fn(q, k, v, model::AttentionInputs{});
    out.backward(grad_out);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {seconds, tracker.WindowPeakBytes() - before};
}

// Causal forward + backward as matrix products: QKᵀ and PV forward, dV, dP, dQ, dK backward;
// 2·s·s·d FLOPs each, half of them under the causal mask. The recompute of QKᵀ in flash's
// backward is not counted (it is extra work, not useful work).
double CausalFlops(int64_t seq) {
  return 6.0 * kBatch * kHeads * static_cast<double>(seq) * seq * kHeadDim;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int max_seq = ArgInt(argc, argv, "--max-seq", 2048);
  const int eager_max_seq = ArgInt(argc, argv, "--eager-max-seq", max_seq);
  const int chunk_block = ArgInt(argc, argv, "--chunk-block", 128);
  const plugins::flash::TileSizes tiles{ArgInt(argc, argv, "--q-tile", 0),
                                        ArgInt(argc, argv, "--k-tile", 0)};
  const auto resolved = plugins::flash::ResolveTileSizes(tiles, kHeadDim);
  std::printf("memsweep_bench_attention  threads: %d  b=%lld heads=%lld head_dim=%lld causal, "
              "forward+backward, %d rounds\n",
              threads, static_cast<long long>(kBatch), static_cast<long long>(kHeads),
              static_cast<long long>(kHeadDim), rounds);
  std::printf("flash tiles: q_tile=%lld k_tile=%lld (L2 %lld KiB)  chunked block: %d\n",
              static_cast<long long>(resolved.q_tile), static_cast<long long>(resolved.k_tile),
              static_cast<long long>(plugins::flash::L2CacheBytes() / 1024), chunk_block);
  std::printf("flash isa: auto = %s (LibTorch CPU capability %s)\n",
              plugins::flash::IsaName(plugins::flash::BestIsa()), at::get_cpu_capability().c_str());
  if (ArgInt(argc, argv, "--auto-gemm", 0) != 0) {
    env::UseFp32Gemm(env::ChooseFp32Gemm(env::Fp32GemmSetting::kAuto));
    env::UseBf16Gemm(env::ChooseBf16Gemm(env::Bf16GemmSetting::kAuto));
  }
  std::printf("GEMM paths: fp32 %s, bf16 %s (core/env/cpu_gemm.h)\n",
              env::Fp32GemmName(env::ActiveFp32Gemm()), env::Bf16GemmName(env::ActiveBf16Gemm()));
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  const double peak_fp32 = env::CachedGemmPeakFlops(at::kFloat);
  const double peak_bf16 = env::CachedGemmPeakFlops(at::kBFloat16);
  std::printf("GEMM calibration (at::mm 1024^3, 1536^3, 2048^3, best of 4 each): fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s\n\n",
              peak_fp32 / 1e9, peak_bf16 / 1e9);

  std::vector<Variant> all = {
      {"eager", plugins::EagerCausalAttention},
      {"chunked", plugins::MakeChunkedAttention(chunk_block)},
      {"flash", plugins::flash::MakeFlashAttention(tiles)},
      // ATen's fused CPU attention, called as attention/sdpa calls it (causal, no mask).
      {"aten_sdpa", [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const model::AttentionInputs&) {
         return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
       }},
  };
  // The flash kernel on every other instruction set this CPU runs ("flash" is the automatic one).
  for (plugins::flash::Isa isa : plugins::flash::SupportedIsas()) {
    if (isa == plugins::flash::BestIsa()) continue;
    all.push_back({std::string("flash_") + plugins::flash::IsaName(isa),
                   plugins::flash::MakeFlashAttention(tiles, isa)});
  }
  for (const auto& v : all) RunOnce(v.fn, 256, at::kFloat);  // warm-up: thread pool, pages

  std::printf("%-5s %5s %-14s %10s %10s %12s %9s %10s %10s %8s\n", "dtype", "seq", "variant",
              "median_s", "best_s", "peak_MiB", "GFLOP/s", "%gemm_fp32", "speedup_fl", "mem_fl");
  for (int seq = 512; seq <= max_seq; seq *= 2) {
    for (const c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
      std::vector<Variant> variants;
      for (const auto& v : all) {
        if (v.name != "eager" || seq <= eager_max_seq) variants.push_back(v);
      }
      std::map<std::string, std::vector<double>> times;
      std::map<std::string, int64_t> peaks;
      std::map<std::string, std::vector<double>> ratio_vs_flash;  // per round: time / flash time
      for (int round = 0; round < rounds; ++round) {
        std::map<std::string, double> this_round;
        for (size_t i = 0; i < variants.size(); ++i) {
          const Variant& v = variants[(i + static_cast<size_t>(round)) % variants.size()];
          const Measurement m = RunOnce(v.fn, seq, dtype);
          times[v.name].push_back(m.seconds);
          peaks[v.name] = std::max(peaks[v.name], m.peak_bytes);
          this_round[v.name] = m.seconds;
        }
        for (const auto& [name, s] : this_round) {
          ratio_vs_flash[name].push_back(s / this_round["flash"]);
        }
      }
      for (const auto& v : variants) {
        const double median = Median(times[v.name]);
        const double best = *std::min_element(times[v.name].begin(), times[v.name].end());
        const double flops = CausalFlops(seq) / median;
        std::printf("%-5s %5d %-14s %10.3f %10.3f %12.1f %9.1f %9.1f%% %9.2fx %7.1f%%\n",
                    dtype == at::kFloat ? "fp32" : "bf16", seq, v.name.c_str(), median, best,
                    MiB(peaks[v.name]), flops / 1e9, 100.0 * flops / peak_fp32,
                    Median(ratio_vs_flash[v.name]),
                    100.0 * static_cast<double>(peaks["flash"]) /
                        static_cast<double>(peaks[v.name]));
      }
      std::printf("  load average: %s\n", LoadAverage().c_str());
    }
  }
  std::printf("\nspeedup_fl: median over rounds of (variant time / flash time) in the same round; "
              "mem_fl: flash peak as a share of the variant's peak.\n"
              "GFLOP/s counts the causal half of six s x s x d products (flash's recompute of "
              "q.k^T excluded); bf16 runs compute in fp32 inside flash, hence %%gemm_fp32.\n");
  return 0;
}
