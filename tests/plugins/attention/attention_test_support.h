// Shared by the attention plugins' tests: random problems (shapes, grouped-query heads, packed
// rows with segment ids), a float64 eager reference for the output and the gradients of q, k
// and v, and the comparison with elementwise error bounds derived from the arithmetic
// (documented in docs/metrics.md, "Attention kernels").
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "attention/eager/eager_attention.h"
#include "core/env/cpu_gemm.h"
#include "memsweep/attention.h"
#include "support/run_configs.h"
#include "support/tolerances.h"

namespace memsweep::testing_support {

struct AttentionCase {
  int64_t batch, heads, kv_heads, seq_len, head_dim;
  bool packed = false;  // rows hold several documents (segment ids), incl. 1-token ones
  int64_t seed = 0;

  std::string Describe() const {
    std::ostringstream out;
    out << "b=" << batch << " h=" << heads << " kv=" << kv_heads << " t=" << seq_len
        << " d=" << head_dim << (packed ? " packed" : "") << " seed=" << seed;
    return out.str();
  }
};

// Segment ids [B, T] for rows of random documents: lengths from 1 (often) to T/2.
inline at::Tensor RandomSegmentIds(int64_t batch, int64_t seq_len, uint32_t seed) {
  std::mt19937 rng(seed);
  at::Tensor ids = at::empty({batch, seq_len}, at::kLong);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t pos = 0, doc = 0;
    while (pos < seq_len) {
      const int64_t longest = std::max<int64_t>(1, seq_len / 2);
      int64_t len = (rng() % 3 == 0) ? 1 : 1 + static_cast<int64_t>(rng() % longest);
      len = std::min(len, seq_len - pos);
      for (int64_t i = 0; i < len; ++i) ids[b][pos + i] = doc;
      pos += len;
      ++doc;
    }
  }
  return ids;
}

struct AttentionResult {
  at::Tensor out, dq, dk, dv;  // float64
};

struct AttentionProblem {
  at::Tensor q, k, v, grad_out;  // float64 values, representable in the tested dtype
  model::AttentionInputs inputs;
};

inline AttentionProblem MakeProblem(const AttentionCase& c, c10::ScalarType dtype) {
  at::manual_seed(c.seed);
  auto draw = [&](int64_t heads) {
    return at::randn({c.batch, heads, c.seq_len, c.head_dim}, at::kDouble).to(dtype).to(at::kDouble);
  };
  AttentionProblem p{draw(c.heads), draw(c.kv_heads), draw(c.kv_heads), draw(c.heads), {}};
  p.inputs.position_ids =
      at::arange(c.seq_len, at::kLong).unsqueeze(0).expand({c.batch, c.seq_len}).contiguous();
  if (c.packed) p.inputs.segment_ids = RandomSegmentIds(c.batch, c.seq_len, 1000 + c.seed);
  return p;
}

// Runs `attention` on the problem in `dtype` (inputs as [B, T, H, D] storage transposed to
// [B, H, T, D], as the model passes them) and returns output and gradients in float64.
inline AttentionResult RunAttention(const model::AttentionFn& attention, const AttentionProblem& p,
                                    c10::ScalarType dtype) {
  auto leaf = [&](const at::Tensor& x) {
    return x.transpose(1, 2).contiguous().to(dtype).transpose(1, 2).requires_grad_(true);
  };
  at::Tensor q = leaf(p.q), k = leaf(p.k), v = leaf(p.v);
  const at::Tensor out = attention(q, k, v, p.inputs);
  out.backward(p.grad_out.to(out.scalar_type()));
  return {out.detach().to(at::kDouble), q.grad().to(at::kDouble), k.grad().to(at::kDouble),
          v.grad().to(at::kDouble)};
}

inline AttentionResult Reference(const AttentionProblem& p) {
  return RunAttention(plugins::EagerCausalAttention, p, at::kDouble);
}

// How a kernel organises its arithmetic, as far as its error bound depends on it.
struct AttentionArithmetic {
  // An online softmax (flash, LibTorch's fused CPU kernel) rescales its running output and row
  // sum when a key block raises the row maximum: at most once per key.
  bool online_softmax = false;
  // Partial sums of dk and dv rounded to the tested dtype before they are added together
  // (chunked: one per query block, accumulated by autograd in that dtype).
  int64_t kv_grad_partials = 1;
};

// Elementwise error bounds (float64, shaped as the results) of a kernel's output and gradients
// against exact arithmetic, on this problem (docs/metrics.md, "Attention kernels").
struct AttentionBounds {
  at::Tensor out, dq, dk, dv;
  double largest_relative;  // the largest first-order relative perturbation ρ of a probability
  at::Tensor dq_terms;      // |dS|·|K|/√d: the size of dq's T-term sums, per query head
};

// [B or 1, 1, T, T]: true where query i may attend to key j (causal, same document).
inline at::Tensor Visible(const AttentionProblem& p) {
  const int64_t t = p.q.size(2);
  at::Tensor visible = at::ones({t, t}, at::kBool).tril().view({1, 1, t, t});
  if (p.inputs.segment_ids.defined()) {
    const at::Tensor ids = p.inputs.segment_ids;
    visible = visible & (ids.unsqueeze(2) == ids.unsqueeze(1)).unsqueeze(1);
  }
  return visible;
}

// [B, H, T, D] per query head -> [B, KV, T, D]: the sum over each key/value head's group.
inline at::Tensor SumGroups(const at::Tensor& x, int64_t kv_heads) {
  return x.view({x.size(0), kv_heads, x.size(1) / kv_heads, x.size(2), x.size(3)}).sum(2);
}

// A first-order componentwise error analysis of attention in a dtype with unit roundoff u_s
// (storage: inputs, stored intermediates, results) accumulating in fp32 (u_a; fp64 for fp64),
// against exact arithmetic. Every quantity below is computed from the problem in float64;
// A = |q|·|k|ᵀ/√d ≥ |S|, Amax_i its row maximum over the visible keys, T the sequence length,
// d the head dimension, e = ExpError(u_a) the error of exp (and log).
//   scores      |ΔS_ij| ≤ δ_i = (γ_d + 3u_s + 4u_a)·Amax_i: the d-term dot product; rounding
//               the scaled operands (LibTorch's math path scales q and k), or the product and
//               its scaled copy, to the dtype; subtracting the row maximum and the log-sum-exp.
//   probability |ΔP_ij| ≤ ρ_i·P_ij, ρ_i = (e^{2δ_i} − 1) + 3e + γ_{T+1} + u_s [+ T·(e + 2u_a)]:
//               softmax moves P_ij by a factor within e^{±2δ_i} when every score moves by δ_i
//               (numerator and normaliser); exp of the numerator and of the normaliser's terms
//               and log of the log-sum-exp; the T-term normaliser and the division; storing P;
//               an online softmax's rescalings (at most one per key).
//   output      |ΔO| ≤ (ρ + γ_T + u_s)·P|V|: the T-term sum P·V, stored (|O| ≤ P|V|).
//   dV          Σ_heads Pᵀ(ρ∘|dO|) + (γ_T + u_s)·Pᵀ|dO|, + (γ_g + n·u_s)·Σ_heads Pᵀ|dO|
//               for the sum over the g query heads of the group and n partial sums in the dtype.
//   dP = dO·Vᵀ  |ΔdP| ≤ (γ_d + u_s)·B, B = |dO|·|V|ᵀ ≥ |dP|.
//   D = Σ_j P∘dP (= rowsum(dO∘O), with O stored): |ΔD| ≤ (ρ + γ_T + γ_d + 2u_s)·Σ_j P∘B.
//   dS = P∘(dP − D): |ΔdS| ≤ P∘[(ρ + 2u_a + u_s)·|dP − D| + |ΔdP| + |ΔD|].
//   dQ = dS·K/√d  |ΔdQ| ≤ (|ΔdS|·|K| + (γ_T + 2u_s)·|dS|·|K|)/√d (scaling and storing).
//   dK = dSᵀ·Q/√d likewise, then summed over the group like dV.
// Each bound neglects products of two perturbations; it is doubled, which covers them while
// every first-order relative term stays at most 1.25 (e^x − 1 ≤ 2x there): ExpectMatchesReference
// checks ρ.
inline AttentionBounds ErrorBounds(const AttentionProblem& p, c10::ScalarType dtype,
                                   AttentionArithmetic arithmetic = {}) {
  const double us = UnitRoundoff(dtype), ua = AccumulationRoundoff(dtype), e = ExpError(ua);
  const int64_t kv_heads = p.k.size(1), group = p.q.size(1) / kv_heads;
  const int64_t t = p.q.size(2), d = p.q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const at::Tensor k = p.k.repeat_interleave(group, 1), v = p.v.repeat_interleave(group, 1);
  const at::Tensor q_abs = p.q.abs(), k_abs = k.abs(), v_abs = v.abs();
  const at::Tensor do_abs = p.grad_out.abs();
  const at::Tensor visible = Visible(p);
  const at::Tensor zero = at::zeros({}, at::kDouble);
  const at::Tensor scores = at::matmul(p.q, k.transpose(-2, -1)) * scale;
  const at::Tensor prob = at::softmax(
      scores.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity()), -1);
  const at::Tensor a =
      at::where(visible, at::matmul(q_abs, k_abs.transpose(-2, -1)) * scale, zero);
  const at::Tensor delta = (Gamma(d, ua) + 3 * us + 4 * ua) * std::get<0>(a.max(-1, true));
  const double rescales = arithmetic.online_softmax ? static_cast<double>(t) * (e + 2 * ua) : 0.0;
  const at::Tensor rho = at::expm1(2 * delta) + 3 * e + Gamma(t + 1, ua) + us + rescales;
  const double n = static_cast<double>(arithmetic.kv_grad_partials);

  const at::Tensor out = (rho + Gamma(t, ua) + us) * at::matmul(prob, v_abs);

  const at::Tensor prob_t = prob.transpose(-2, -1);
  const at::Tensor dv_size = at::matmul(prob_t, do_abs);
  const at::Tensor dv = SumGroups(at::matmul(prob_t, rho * do_abs) + (Gamma(t, ua) + us) * dv_size,
                                  kv_heads) +
                        (Gamma(group, ua) + n * us) * SumGroups(dv_size, kv_heads);

  const at::Tensor b = at::matmul(do_abs, v_abs.transpose(-2, -1));
  const at::Tensor ddp = (Gamma(d, ua) + us) * b;
  const at::Tensor dd = (rho + Gamma(t, ua) + Gamma(d, ua) + 2 * us) * (prob * b).sum(-1, true);
  const at::Tensor dp = at::matmul(p.grad_out, v.transpose(-2, -1));
  const at::Tensor centred = (dp - (prob * dp).sum(-1, true)).abs();
  const at::Tensor ds_size = prob * centred;
  const at::Tensor dds = prob * ((rho + 2 * ua + us) * centred + ddp + dd);

  const double product = Gamma(t, ua) + 2 * us;
  const at::Tensor dq = scale * (at::matmul(dds, k_abs) + product * at::matmul(ds_size, k_abs));
  const at::Tensor dk_size = scale * at::matmul(ds_size.transpose(-2, -1), q_abs);
  const at::Tensor dk =
      SumGroups(scale * at::matmul(dds.transpose(-2, -1), q_abs) + product * dk_size, kv_heads) +
      (Gamma(group, ua) + n * us) * SumGroups(dk_size, kv_heads);
  return {2 * out, 2 * dq, 2 * dk, 2 * dv, rho.max().item<double>(),
          scale * at::matmul(ds_size, k_abs)};
}

// |actual − expected| ≤ bound elementwise; returns the worst ratio error / bound.
inline double ExpectWithin(const at::Tensor& actual, const at::Tensor& expected,
                           const at::Tensor& bound, const std::string& what) {
  EXPECT_EQ(actual.sizes(), expected.sizes()) << what;
  if (actual.sizes() != expected.sizes()) return INFINITY;
  const double worst = WorstRatio(actual, expected, bound);
  EXPECT_LE(worst, 1.0) << what << ": max |error| / bound = " << worst << ", max |error| = "
                        << (actual - expected).abs().max().item<double>() << ", max bound = "
                        << bound.max().item<double>();
  return worst;
}

// While alive, bf16 matrix products take the path a run takes on this CPU (`[device] gemm =
// "auto"`: native where oneDNN has AMX or a non-Intel AVX512-BF16, upcast elsewhere), whose numerics — fp32
// accumulation, one rounding of the result — the bounds assume; the path before is restored.
class Bf16GemmAsARunPicks {
 public:
  Bf16GemmAsARunPicks() : before_(env::ActiveBf16Gemm()) {
    env::UseBf16Gemm(env::ChooseBf16Gemm(env::Bf16GemmSetting::kAuto));
  }
  ~Bf16GemmAsARunPicks() { env::UseBf16Gemm(before_); }
  Bf16GemmAsARunPicks(const Bf16GemmAsARunPicks&) = delete;
  Bf16GemmAsARunPicks& operator=(const Bf16GemmAsARunPicks&) = delete;

 private:
  env::Bf16Gemm before_;
};

// The largest error / bound ratio of one comparison, per result.
struct AttentionRatios {
  double out = 0, dq = 0, dk = 0, dv = 0;
  void Fold(const AttentionRatios& o) {
    out = std::max(out, o.out), dq = std::max(dq, o.dq), dk = std::max(dk, o.dk),
    dv = std::max(dv, o.dv);
  }
  std::string Describe() const {
    std::ostringstream s;
    s << "largest error/bound: out " << out << ", dq " << dq << ", dk " << dk << ", dv " << dv;
    return s.str();
  }
};

inline AttentionRatios ExpectMatchesReference(const model::AttentionFn& attention,
                                              const AttentionCase& c, c10::ScalarType dtype,
                                              AttentionArithmetic arithmetic = {}) {
  Bf16GemmAsARunPicks gemm;
  const AttentionProblem p = MakeProblem(c, dtype);
  const AttentionResult expected = Reference(p);
  const AttentionResult actual = RunAttention(attention, p, dtype);
  const AttentionBounds bounds = ErrorBounds(p, dtype, arithmetic);
  const std::string what = c.Describe() + " " + c10::toString(dtype);
  EXPECT_LE(bounds.largest_relative, 1.25) << what << ": the first-order bound does not apply";
  AttentionRatios r;
  r.out = ExpectWithin(actual.out, expected.out, bounds.out, what + " output");
  r.dq = ExpectWithin(actual.dq, expected.dq, bounds.dq, what + " dq");
  r.dk = ExpectWithin(actual.dk, expected.dk, bounds.dk, what + " dk");
  r.dv = ExpectWithin(actual.dv, expected.dv, bounds.dv, what + " dv");
  return r;
}

// A `tiny` training run of `steps` steps with the attention plugin chosen by `overrides` follows
// the same run with eager: the same arithmetic in another order (TrajectoryTolerance).
inline void ExpectTinyLossesMatchEager(int64_t steps, const std::vector<std::string>& overrides) {
  const config::RunConfig eager_run = TinyRun(steps, {"strategies.attention.plugin=\"eager\""});
  const auto eager = Losses(Train(eager_run));
  const auto other = Losses(Train(TinyRun(steps, overrides)));
  ExpectSameTrajectory(other, eager, StepPathTerms(eager_run), overrides.front());
}

// The property sweep: odd lengths, lengths below and not a multiple of the tiles, GQA ratios
// 1, 2 and 4, head dims that are and are not multiples of 16, packed rows with 1-token documents.
inline std::vector<AttentionCase> SweepCases() {
  return {
      {1, 2, 2, 1, 16},          {2, 2, 2, 7, 16},           {1, 4, 4, 37, 16, false, 1},
      {2, 4, 2, 50, 24, false, 2}, {1, 8, 2, 33, 32, false, 3}, {1, 2, 1, 64, 64, false, 4},
      {2, 4, 2, 45, 16, true, 5},  {3, 4, 1, 29, 8, true, 6},   {1, 2, 2, 70, 16, true, 7},
  };
}

}  // namespace memsweep::testing_support
