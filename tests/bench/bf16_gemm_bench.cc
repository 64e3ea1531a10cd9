// memsweep_bench_bf16_gemm: the CPU's bf16 matrix products both ways (core/env/bf16_gemm.h) —
// LibTorch's native kernels and memsweep's upcast path — against fp32, at the small preset's
// training shapes (4 x 512 tokens, hidden 512, intermediate 1376, vocab 8192; forward and the two
// backward products of each). Variants are interleaved within each round, their order rotating;
// ratios are taken within a round and the median over rounds is reported. Prints the CPU's
// capability and the load average.
//
//   build/release/memsweep_bench_bf16_gemm [--rounds R]
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
#include "core/env/bf16_gemm.h"

namespace {

using memsweep::env::Bf16Gemm;
using memsweep::env::UseBf16Gemm;

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

}  // namespace

int main(int argc, char** argv) {
  const int rounds = memsweep::bench::ArgInt(argc, argv, "--rounds", 9);
  const int64_t tokens = 4 * 512;
  const std::vector<Shape> shapes = {{tokens, 512, 512 * 3},  // q, k, v
                                     {tokens, 512, 512},      // o
                                     {tokens, 512, 1376 * 2}, // gate, up
                                     {tokens, 1376, 512},     // down
                                     {tokens, 512, 8192}};    // LM head
  double flops = 0;
  for (const Shape& s : shapes) flops += 3 * 2.0 * s.m * s.k * s.n;
  std::printf("CPU capability %s, threads %d, load %s\n", at::get_cpu_capability().c_str(),
              at::get_num_threads(), memsweep::bench::LoadAverage().c_str());
  const char* names[] = {"fp32", "bf16 native", "bf16 upcast"};
  std::vector<double> seconds[3], native_ratio, upcast_ratio;
  for (int warm = 0; warm < 2; ++warm) {
    StepSeconds(shapes, at::kFloat);
    UseBf16Gemm(Bf16Gemm::kNative);
    StepSeconds(shapes, at::kBFloat16);
    UseBf16Gemm(Bf16Gemm::kUpcast);
    StepSeconds(shapes, at::kBFloat16);
  }
  for (int r = 0; r < rounds; ++r) {
    double t[3];
    for (int j = 0; j < 3; ++j) {
      const int v = (r + j) % 3;
      if (v == 1) UseBf16Gemm(Bf16Gemm::kNative);
      if (v == 2) UseBf16Gemm(Bf16Gemm::kUpcast);
      t[v] = StepSeconds(shapes, v == 0 ? at::kFloat : at::kBFloat16);
    }
    for (int v = 0; v < 3; ++v) seconds[v].push_back(t[v]);
    native_ratio.push_back(t[0] / t[1]);
    upcast_ratio.push_back(t[0] / t[2]);
  }
  UseBf16Gemm(Bf16Gemm::kNative);
  for (int v = 0; v < 3; ++v) {
    std::printf("%-12s %8.1f GFLOP/s (median of %d rounds)\n", names[v],
                flops / Median(seconds[v]) / 1e9, rounds);
  }
  std::printf("bf16 native / fp32 rate: %.2fx   bf16 upcast / fp32 rate: %.2fx (medians of the "
              "per-round ratios)\n",
              Median(native_ratio), Median(upcast_ratio));
  std::printf("load after: %s\n", memsweep::bench::LoadAverage().c_str());
  return 0;
}
