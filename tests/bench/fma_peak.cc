#include "fma_peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>

namespace memsweep::bench {
namespace {

constexpr long kIterations = 20'000'000;
constexpr int kChains = 12;  // independent accumulators: hides the 4-cycle FMA latency

// Twelve independent accumulators, written out so they stay in registers: enough chains to
// cover FMA latency (4 cycles) times the two FMA ports. Returns the sum so the loop is kept.
#define MEMSWEEP_FMA_CHAINS(VEC, SET1, FMADD, ADD)                                        \
  VEC c0 = SET1(1.0f), c1 = SET1(1.1f), c2 = SET1(1.2f), c3 = SET1(1.3f), c4 = SET1(1.4f), \
      c5 = SET1(1.5f), c6 = SET1(1.6f), c7 = SET1(1.7f), c8 = SET1(1.8f), c9 = SET1(1.9f), \
      c10 = SET1(2.0f), c11 = SET1(2.1f);                                                 \
  const VEC a = SET1(0.999999f), b = SET1(1e-7f);                                         \
  for (long it = 0; it < iterations; ++it) {                                              \
    c0 = FMADD(c0, a, b); c1 = FMADD(c1, a, b); c2 = FMADD(c2, a, b);                     \
    c3 = FMADD(c3, a, b); c4 = FMADD(c4, a, b); c5 = FMADD(c5, a, b);                     \
    c6 = FMADD(c6, a, b); c7 = FMADD(c7, a, b); c8 = FMADD(c8, a, b);                     \
    c9 = FMADD(c9, a, b); c10 = FMADD(c10, a, b); c11 = FMADD(c11, a, b);                 \
  }                                                                                       \
  VEC sum = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));            \
  sum = ADD(sum, ADD(ADD(c8, c9), ADD(c10, c11)));

__attribute__((target("avx512f"))) float Avx512Chains(long iterations) {
  MEMSWEEP_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2,fma"))) float Avx2Chains(long iterations) {
  MEMSWEEP_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
  float out[8];
  _mm256_storeu_ps(out, sum);
  return out[0];
}

}  // namespace

FmaPeak MeasureFmaPeak(int threads) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int lanes = avx512 ? 16 : 8;
  FmaPeak peak;
  peak.isa = avx512 ? "avx512f" : "avx2+fma";
  peak.threads = threads;
  double best = 1e30;
  volatile float sink = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    {
      const float s = avx512 ? Avx512Chains(kIterations / 4) : Avx2Chains(kIterations / 4);
#pragma omp critical
      sink = sink + s;
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                              .count());
  }
  const double flops = 2.0 * lanes * kChains * static_cast<double>(kIterations / 4) * threads;
  peak.flops = flops / best;
  return peak;
}

}  // namespace memsweep::bench
