#include "flash_tile_ops.h"

#include <cmath>
#include <cstring>
#include <limits>

// Vector-typed helpers are always inlined into the cloned functions below and take vectors by
// reference, so the ABI of a 64-byte vector argument never matters.
#pragma GCC diagnostic ignored "-Wpsabi"

#define FLASH_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#define FLASH_INLINE inline __attribute__((always_inline))

namespace memsweep::plugins::flash {
namespace {

typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t IVec __attribute__((vector_size(kLanes * sizeof(int32_t))));

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

FLASH_INLINE Vec Load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
FLASH_INLINE void Store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }
FLASH_INLINE Vec Splat(float x) { return Vec{} + x; }
FLASH_INLINE Vec Max(const Vec& a, const Vec& b) { return a > b ? a : b; }

FLASH_INLINE float HorizontalMax(const Vec& v) {
  float m = v[0];
  for (int i = 1; i < kLanes; ++i) m = v[i] > m ? v[i] : m;
  return m;
}
FLASH_INLINE float HorizontalSum(const Vec& v) {
  float s = 0.0f;
  for (int i = 0; i < kLanes; ++i) s += v[i];
  return s;
}

// exp(x) as Cephes' expf: x = n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r, and
// 2^n built in the exponent bits. Relative error ~2 ulp; x below −87.3 (incl. −inf) gives 0.
FLASH_INLINE Vec Exp(const Vec& x) {
  const Vec lo = Splat(-87.3365447f), hi = Splat(88.0f);
  Vec xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  const float kRound = 12582912.0f;  // 1.5·2^23: adding it rounds to the nearest integer
  const Vec n = (xc * 1.44269504088896341f + kRound) - kRound;
  const Vec r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  Vec p = Splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const IVec bits = (__builtin_convertvector(n, IVec) + 127) << 23;
  Vec pow2;
  std::memcpy(&pow2, &bits, sizeof pow2);
  const Vec result = p * pow2;
  return x < lo ? Vec{} : result;
}

// c[R×(V·kLanes)] (+)= a[R×k] · b[k×(V·kLanes)], the accumulators held in registers. With
// kTransA, a is stored transposed ([k×R] with leading dimension lda): c (+)= aᵀ·b.
template <bool kTransA, int R, int V>
FLASH_INLINE void MicroKernel(int64_t k, const float* a, int64_t lda, const float* b,
                              int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  Vec acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = accumulate ? Load(c + r * ldc + v * kLanes) : Vec{};
  }
  for (int64_t p = 0; p < k; ++p) {
    Vec bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) bv[v] = Load(b + p * ldb + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float ar = kTransA ? a[p * lda + r] : a[r * lda + p];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] += bv[v] * ar;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) Store(c + r * ldc + v * kLanes, acc[r][v]);
  }
}

template <bool kTransA, int R>
FLASH_INLINE void MicroRow(int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                           int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  int64_t j = 0;
  for (; j + 4 * kLanes <= n; j += 4 * kLanes) {
    MicroKernel<kTransA, R, 4>(k, a, lda, b + j, ldb, c + j, ldc, accumulate);
  }
  for (; j < n; j += kLanes) {
    MicroKernel<kTransA, R, 1>(k, a, lda, b + j, ldb, c + j, ldc, accumulate);
  }
}

// Rows of c in blocks of four; a row block starts at a + i·lda (a + i when transposed).
template <bool kTransA>
FLASH_INLINE void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  constexpr int kRows = 4;
  const int64_t row_step = kTransA ? 1 : lda;
  int64_t i = 0;
  for (; i + kRows <= m; i += kRows) {
    MicroRow<kTransA, kRows>(n, k, a + i * row_step, lda, b, ldb, c + i * ldc, ldc, accumulate);
  }
  for (; i < m; ++i) {
    MicroRow<kTransA, 1>(n, k, a + i * row_step, lda, b, ldb, c + i * ldc, ldc, accumulate);
  }
}

}  // namespace

FLASH_CLONES void GemmNN(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  Gemm<false>(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

FLASH_CLONES void GemmTN(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  Gemm<true>(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

FLASH_CLONES void OnlineSoftmaxStep(int64_t rows, int64_t cols, float* s, int64_t lds,
                                    float* row_max, float* row_sum, float* o, int64_t d_cols,
                                    int64_t ldo) {
  for (int64_t i = 0; i < rows; ++i) {
    float* srow = s + i * lds;
    Vec mx = Splat(kMinusInf);
    for (int64_t j = 0; j < cols; j += kLanes) mx = Max(mx, Load(srow + j));
    const float tile_max = HorizontalMax(mx);
    const float old_max = row_max[i];
    const float new_max = tile_max > old_max ? tile_max : old_max;
    // Every row has seen a visible key by its first tile, so new_max is finite.
    const Vec shift = Splat(new_max);
    Vec sum = Vec{};
    for (int64_t j = 0; j < cols; j += kLanes) {
      const Vec p = Exp(Load(srow + j) - shift);
      Store(srow + j, p);
      sum += p;
    }
    const float alpha = std::exp(old_max - new_max);  // 0 on the first tile (old_max = -inf)
    row_sum[i] = row_sum[i] * alpha + HorizontalSum(sum);
    row_max[i] = new_max;
    if (alpha == 1.0f) continue;
    float* orow = o + i * ldo;
    for (int64_t j = 0; j < d_cols; j += kLanes) Store(orow + j, Load(orow + j) * alpha);
  }
}

FLASH_CLONES void ProbabilitiesFromScores(int64_t rows, int64_t cols, float* s, int64_t lds,
                                          float scale, const float* lse) {
  for (int64_t i = 0; i < rows; ++i) {
    float* srow = s + i * lds;
    const Vec shift = Splat(lse[i]);
    for (int64_t j = 0; j < cols; j += kLanes) {
      Store(srow + j, Exp(Load(srow + j) * scale - shift));
    }
  }
}

FLASH_CLONES void ScoreGradient(int64_t rows, int64_t cols, const float* p, int64_t ldp,
                                float* dp, int64_t lddp, const float* delta, float scale) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* prow = p + i * ldp;
    float* drow = dp + i * lddp;
    const Vec d = Splat(delta[i]);
    for (int64_t j = 0; j < cols; j += kLanes) {
      Store(drow + j, Load(prow + j) * (Load(drow + j) - d) * scale);
    }
  }
}

FLASH_CLONES void ExpInPlace(float* x, int64_t n) {
  for (int64_t j = 0; j < n; j += kLanes) Store(x + j, Exp(Load(x + j)));
}

}  // namespace memsweep::plugins::flash
