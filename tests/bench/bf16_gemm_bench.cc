// memsweep_bench_bf16_gemm: the CPU's matrix products every way core/env/cpu_gemm.h offers —
// fp32 through LibTorch's kernel (MKL) and through oneDNN (where the CPU can run it), bf16
// through LibTorch's native kernels and through memsweep's upcast path — at the small preset's
// training shapes (4 x 512 tokens, hidden 512, intermediate 1376, vocab 8192; forward and the two
// backward products of each). Variants are interleaved within each round, their order rotating;
// each variant's rate against fp32 native is taken within a round and the median over rounds is
// reported. bf16 variants use auto's fp32 path. Prints the CPU, its capability and the load.
//
//   build/release/memsweep_bench_bf16_gemm [--rounds R] [--glibc-heap 1]
//   ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
//     build/release/memsweep_bench_bf16_gemm        # as on an AVX2-only CPU
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench_args.h"
#include "core/env/cpu_gemm.h"
#include "core/env/environment.h"
#include "core/env/onednn_matmul.h"
#include "core/memory/tracking_allocator.h"

namespace {

using memsweep::env::Bf16Gemm;
using memsweep::env::ChooseFp32Gemm;
using memsweep::env::Fp32Gemm;
using memsweep::env::Fp32GemmName;
using memsweep::env::Fp32GemmSetting;
using memsweep::env::UseBf16Gemm;
using memsweep::env::UseFp32Gemm;

struct Shape {
  int64_t m, k, n;
};

// Seconds for every product of one training step's GEMM shapes: y = x·Wᵀ, dx = dy·W, dW = dyᵀ·x.
double StepSeconds(const std::vector<Shape>& shapes, c10::ScalarType dtype) {
  std::vector<at::Tensor> xs, ws, dys;
  for (const Shape& s : shapes) {
    xs.push_back(at::randn({s.m, s.k}).to(dtype));
    ws.push_back(at::randn({s.n, s.k}).to(dtype));
    dys.push_back(at::randn({s.m, s.n}).to(dtype));
  }
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < shapes.size(); ++i) {
    at::Tensor y = at::mm(xs[i], ws[i].t());
    at::Tensor dx = at::mm(dys[i], ws[i]);
    at::Tensor dw = at::mm(dys[i].t(), xs[i]);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Variant {
  const char* name;
  c10::ScalarType dtype;
  Fp32Gemm fp32;
  Bf16Gemm bf16;
};

}  // namespace

int main(int argc, char** argv) {
  // Tensors come from memsweep's heap, as in a run: freed blocks serve the next product's
  // temporaries instead of fresh pages (glibc maps anything over 32 MiB anew on every call).
  // --glibc-heap 1 leaves glibc's default policy, for comparison.
  const bool glibc_heap = memsweep::bench::ArgInt(argc, argv, "--glibc-heap", 0) != 0;
  if (!glibc_heap) memsweep::memory::TrackingAllocator::Install();
  const int rounds = memsweep::bench::ArgInt(argc, argv, "--rounds", 9);
  const int64_t tokens = 4 * 512;
  const std::vector<Shape> shapes = {{tokens, 512, 512 * 3},  // q, k, v
                                     {tokens, 512, 512},      // o
                                     {tokens, 512, 1376 * 2}, // gate, up
                                     {tokens, 1376, 512},     // down
                                     {tokens, 512, 8192}};    // LM head
  double flops = 0;
  for (const Shape& s : shapes) flops += 3 * 2.0 * s.m * s.k * s.n;
  const Fp32Gemm fp32_auto = ChooseFp32Gemm(Fp32GemmSetting::kAuto);
  std::printf("CPU %s (%s), capability %s, threads %d, load %s\n",
              memsweep::env::CpuModelName().c_str(), memsweep::env::CpuVendor().c_str(),
              at::get_cpu_capability().c_str(), at::get_num_threads(),
              memsweep::bench::LoadAverage().c_str());
  std::printf("fp32 path auto = %s; bf16 upcast multiplies through it; heap: %s\n",
              Fp32GemmName(fp32_auto), glibc_heap ? "glibc's default" : "memsweep's (as in a run)");
  std::vector<Variant> variants = {{"fp32 native", at::kFloat, Fp32Gemm::kNative, Bf16Gemm::kNative}};
  if (memsweep::env::OnednnFp32Usable()) {
    variants.push_back({"fp32 onednn", at::kFloat, Fp32Gemm::kOnednn, Bf16Gemm::kNative});
  }
  variants.push_back({"bf16 native", at::kBFloat16, fp32_auto, Bf16Gemm::kNative});
  variants.push_back({"bf16 upcast", at::kBFloat16, fp32_auto, Bf16Gemm::kUpcast});
  const size_t n = variants.size();
  const auto run = [&](const Variant& v) {
    UseFp32Gemm(v.fp32);
    UseBf16Gemm(v.bf16);
    return StepSeconds(shapes, v.dtype);
  };
  for (int warm = 0; warm < 2; ++warm) {
    for (const Variant& v : variants) run(v);
  }
  std::vector<std::vector<double>> seconds(n), ratio(n);  // ratio: fp32 native time / variant's
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> t(n);
    for (size_t j = 0; j < n; ++j) {
      const size_t v = (r + j) % n;
      t[v] = run(variants[v]);
    }
    for (size_t v = 0; v < n; ++v) {
      seconds[v].push_back(t[v]);
      ratio[v].push_back(t[0] / t[v]);
    }
  }
  UseBf16Gemm(Bf16Gemm::kNative);
  UseFp32Gemm(Fp32Gemm::kNative);
  for (size_t v = 0; v < n; ++v) {
    std::printf("%-12s %8.1f GFLOP/s   %.2fx fp32 native (medians of %d rounds)\n",
                variants[v].name, flops / Median(seconds[v]) / 1e9, Median(ratio[v]), rounds);
  }
  std::printf("load after: %s\n", memsweep::bench::LoadAverage().c_str());
  return 0;
}
