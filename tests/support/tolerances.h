// Numerical tolerances for memsweep's tests, derived from the arithmetic rather than from what one
// CPU happened to produce (docs/metrics.md, "Test tolerances"). Every bound is a unit roundoff u
// (of the dtype a value is stored or accumulated in) times a stated growth factor: the number of
// terms of a reduction, the depth of a computation, the number of training steps. A test that
// compares two computations allows the sum of their two bounds.
//
//   const double u = UnitRoundoff(at::kFloat);                 // 2^-24
//   EXPECT_LE(err, Gamma(k, u) * sum_of_abs_products);         // a k-term dot product, worst case
//   const at::Tensor bound = ProductErrorBound(at::mm(a.abs(), b.abs()), exact, k, u, u_bf16);
//
// Two kinds of bound:
//   - worst case (Gamma): rigorous for any order of the operations, any blocking, any CPU; used
//     for kernels checked against a float64 (or exact) reference.
//   - probabilistic (ProbabilisticGamma): for whole forward/backward passes and training runs,
//     whose worst-case bound sums every reduction along thousands of terms and would admit
//     errors that only a bug produces. Rounding errors modelled as independent, mean zero and
//     bounded by u (Higham & Mary, "A New Approach to Probabilistic Rounding Error Analysis",
//     SIAM J. Sci. Comput. 41(5), 2019): n roundings in sequence err by at most
//     γ̃_n(λ) = exp(λ·√n·u + n·u²/(1 − u)) − 1 ≈ λ·√n·u, with probability at least
//     1 − 2n·exp(−λ²(1 − u)²/2). kLambda = 6: at least 1 − 3e-8·n (1 − 2e-4 for n = 6000).
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>

#include "core/model/llama_config.h"

namespace memsweep::testing_support {

// Unit roundoff u = 2^-p for p significand bits (the implicit one included): round to nearest
// moves a value by at most u relative.
inline constexpr double kFp64Roundoff = 0x1p-53;
inline constexpr double kFp32Roundoff = 0x1p-24;
inline constexpr double kFp16Roundoff = 0x1p-11;
inline constexpr double kBf16Roundoff = 0x1p-8;

inline double UnitRoundoff(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble: return kFp64Roundoff;
    case at::kFloat: return kFp32Roundoff;
    case at::kHalf: return kFp16Roundoff;
    case at::kBFloat16: return kBf16Roundoff;
    default: TORCH_CHECK(false, "no unit roundoff for ", dtype);
  }
}

// What memsweep's kernels (and LibTorch's CPU kernels) accumulate `dtype` in: fp64 in fp64, the
// rest in fp32 (bf16/fp16 GEMMs, softmax and sums widen to fp32 and round the result once).
inline double AccumulationRoundoff(c10::ScalarType dtype) {
  return dtype == at::kDouble ? kFp64Roundoff : kFp32Roundoff;
}

// γ_k = k·u/(1 − k·u) (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1): a
// k-term sum or dot product, evaluated in any order with unit roundoff u, is within γ_k·Σ|terms|
// of the exact value; k roundings in sequence move a value by a factor within 1 ± γ_k.
inline double Gamma(int64_t k, double u) {
  const double ku = static_cast<double>(k) * u;
  TORCH_CHECK(ku < 1.0, "k·u = ", ku, ": no bound");
  return ku / (1.0 - ku);
}

// Relative error of the exp in the kernels under test, in units of their u: at most 8·u.
// LibTorch's vectorised exp (Sleef's u10 functions) is within 1 ulp ≤ 2u, flash's Cephes-style
// polynomial within 4u by its operation count (FlashTileOpsTest.VectorisedExpMatchesStdExp holds
// it to that); 8u covers either twice.
inline double ExpError(double u) { return 8.0 * u; }

// γ̃_n(λ) of the probabilistic model above; kLambda = 6.
inline constexpr double kLambda = 6.0;
inline double ProbabilisticGamma(int64_t n, double u) {
  const double nd = static_cast<double>(n);
  return std::expm1(kLambda * std::sqrt(nd) * u + nd * u * u / (1.0 - u));
}

// Elementwise bound of a matrix product computed with k-term sums accumulated with unit roundoff
// u_acc and the result rounded once to a format with unit roundoff u_out (0: not rounded), from
// float64 tensors: `magnitude` = |A|·|B| (+ |C0| for an added term) and `exact` = A·B (+ C0):
//   |Ĉ − C| ≤ γ_k·magnitude + u_out·(|C| + γ_k·magnitude).
inline at::Tensor ProductErrorBound(const at::Tensor& magnitude, const at::Tensor& exact, int64_t k,
                                    double u_acc, double u_out) {
  const at::Tensor sum_error = Gamma(k, u_acc) * magnitude;
  return sum_error + u_out * (exact.abs() + sum_error);
}

// Worst |actual − expected| / bound over the elements (≤ 1: within the bound). Elements whose
// bound is 0 must be exact.
inline double WorstRatio(const at::Tensor& actual, const at::Tensor& expected,
                         const at::Tensor& bound) {
  const at::Tensor error = (actual.to(at::kDouble) - expected.to(at::kDouble)).abs();
  const at::Tensor b = bound.to(at::kDouble);
  if (error.numel() == 0) return 0.0;
  const at::Tensor exact_required = b == 0;
  if (at::logical_and(exact_required, error > 0).any().item<bool>()) return INFINITY;
  return at::where(exact_required, at::zeros_like(error), error / b).max().item<double>();
}

// The longest chain of rounded operations in one training step of a Llama model, counted as the
// terms of every reduction along it (a k-term sum counts k):
//   forward, per layer: RMSNorm's mean (h), the q/k/v projections (h), scores (head_dim),
//     softmax's sum (T), P·V (T), the output projection (h), RMSNorm (h), gate/up (h), down (I);
//   then the final RMSNorm (h), the LM head (h), log-softmax over the vocabulary (V) and the
//   loss's sum over the step's tokens (N);
//   backward: the same chain transposed (each product's input gradient sums over the dimension
//     the forward produced: about as many terms again), plus the weight gradients' sums over the
//     step's N tokens.
// So forward F = L·(5h + head_dim + 2T + I) + 2h + V + N, and a step 2F + N.
inline int64_t LlamaForwardPathTerms(const model::LlamaConfig& c, int64_t seq_len,
                                     int64_t tokens) {
  const int64_t h = c.hidden_size, head_dim = c.hidden_size / c.num_attention_heads;
  return c.num_hidden_layers * (5 * h + head_dim + 2 * seq_len + c.intermediate_size) + 2 * h +
         c.vocab_size + tokens;
}
inline int64_t LlamaStepPathTerms(const model::LlamaConfig& c, int64_t seq_len, int64_t tokens) {
  return 2 * LlamaForwardPathTerms(c, seq_len, tokens) + tokens;
}

// Relative tolerance for step `step` (0-based) of two training runs that do the same arithmetic
// in a different order (micro-batch shapes, ranks, kernels): each run's loss is within
// γ̃_G(λ) of exact arithmetic per step it has taken (G = LlamaStepPathTerms), the step's own
// forward and backward plus what each earlier update's rounding moved the parameters by (first
// order: an update's relative error moves the next losses by as much, AdamW's update being
// normalised), so (step + 1)·γ̃_G per run; two runs: twice that.
inline double TrajectoryTolerance(int64_t step, int64_t step_path_terms, double u) {
  return 2.0 * static_cast<double>(step + 1) * ProbabilisticGamma(step_path_terms, u);
}

}  // namespace memsweep::testing_support
