// Tile-level arithmetic of the flash attention kernel: small dense fp32 matrices held in
// scratch buffers (row-major, column counts padded to multiples of kLanes) — a register-blocked
// matrix multiply, a vectorised exp, the online-softmax update and the backward's elementwise
// steps. Each function is compiled twice (target_clones): once for AVX-512 (x86-64-v4) and once
// for the baseline ISA; the loader picks the clone the CPU supports. The loops use GCC vector
// types, so the AVX-512 clone works on 16-float zmm registers whatever flags the rest of the
// build uses (LibTorch's at::vec::Vectorized would be scalar here: plugins are not compiled with
// LibTorch's CPU_CAPABILITY defines).
//
//   GemmNN(m, n, k, a, lda, b, ldb, c, ldc, /*accumulate=*/true);  // c += a·b, n % kLanes == 0
#pragma once

#include <cstdint>

namespace memsweep::plugins::flash {

constexpr int64_t kLanes = 16;  // floats per vector (one zmm register)

inline int64_t RoundUpToLanes(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// c[m×n] (+)= a[m×k] · b[k×n]; all row-major with leading dimensions in floats. n must be a
// multiple of kLanes (pad with zero columns).
void GemmNN(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
            int64_t ldb, float* c, int64_t ldc, bool accumulate);

// c[m×n] (+)= aᵀ · b with a stored [k×m] (leading dimension lda): products with a transposed
// tile (Pᵀ·dO, dSᵀ·Q) without transposing it.
void GemmTN(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
            int64_t ldb, float* c, int64_t ldc, bool accumulate);

// One key tile of the forward's online softmax for `rows` query rows: s[rows×cols] holds scaled
// scores (masked entries -inf, cols a multiple of kLanes). Updates the running row maximum and
// sum, overwrites s with p = exp(s − new max) and rescales the output accumulator o[rows×d_cols]
// by exp(old max − new max).
void OnlineSoftmaxStep(int64_t rows, int64_t cols, float* s, int64_t lds, float* row_max,
                       float* row_sum, float* o, int64_t d_cols, int64_t ldo);

// Backward: s := exp(s·scale − lse[i]) (the probabilities P, recomputed), masked entries
// (-inf) become 0.
void ProbabilitiesFromScores(int64_t rows, int64_t cols, float* s, int64_t lds, float scale,
                             const float* lse);

// Backward: dp := scale · p ∘ (dp − delta[i]) (dS, with the softmax scale folded in).
void ScoreGradient(int64_t rows, int64_t cols, const float* p, int64_t ldp, float* dp,
                   int64_t lddp, const float* delta, float scale);

// Vectorised exp over n floats (n a multiple of kLanes), for tests: x ≤ −88 gives 0.
void ExpInPlace(float* x, int64_t n);

}  // namespace memsweep::plugins::flash
