// Shared by the attention plugins' tests: random problems (shapes, grouped-query heads, packed
// rows with segment ids), a float64 eager reference for the output and the gradients of q, k
// and v, and the comparison with a per-dtype tolerance (documented in docs/metrics.md).
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "attention/eager/eager_attention.h"
#include "core/model/attention.h"
#include "support/run_configs.h"

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

// |actual − reference| ≤ atol + rtol·|reference|, elementwise.
struct Tolerance {
  double atol, rtol;
};

// Per dtype, for outputs and for gradients (see docs/metrics.md, "Attention kernels").
//
// bf16 outputs: a kernel may round the scores S = q·kᵀ/√d, the probabilities P and the output O
// to bf16 (unit roundoff u = 2⁻⁸), accumulating in fp32. Rounding S moves each exp(S) by a
// factor within exp(±u·S_max), so each p_j by at most 2u·S_max relative; rounding P adds u; O
// adds u·|O|. To first order |O − O_ref| ≤ V_max·u·(2·S_max + 1) + u·|O_ref|, with S_max the
// largest |score| and V_max the largest |v| of the problem. The test allows twice that (second
// order terms, and kernels that round one more intermediate). This bound follows from the
// arithmetic, whatever GEMM kernel a CPU runs.
inline Tolerance OutputTolerance(c10::ScalarType dtype, double score_max,
                                 double value_max) {
  if (dtype != at::kBFloat16) return Tolerance{2e-6, 1e-5};
  const double u = std::ldexp(1.0, -8);
  return Tolerance{2.0 * value_max * u * (2.0 * score_max + 1.0), 2.0 * u};
}
inline Tolerance GradTolerance(c10::ScalarType dtype) {
  return dtype == at::kBFloat16 ? Tolerance{3e-2, 5e-2} : Tolerance{1e-5, 1e-4};
}

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

inline void ExpectClose(const at::Tensor& actual, const at::Tensor& expected, Tolerance tol,
                        const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const at::Tensor excess = (actual - expected).abs() - tol.rtol * expected.abs();
  const double worst = excess.numel() == 0 ? 0.0 : excess.max().item<double>();
  EXPECT_LE(worst, tol.atol) << what << ": max |error| − rtol·|ref| = " << worst
                             << " (atol " << tol.atol << ", rtol " << tol.rtol
                             << "), max |error| = " << (actual - expected).abs().max().item<double>();
}

// Largest |score| q·kᵀ/√d of the problem (every pair, masked or not: an upper bound).
inline double ScoreMax(const AttentionProblem& p) {
  const int64_t group = p.q.size(1) / p.k.size(1);
  const at::Tensor keys = p.k.repeat_interleave(group, 1);
  return (at::matmul(p.q, keys.transpose(-2, -1)) / std::sqrt(static_cast<double>(p.q.size(3))))
      .abs()
      .max()
      .item<double>();
}

inline void ExpectMatchesReference(const model::AttentionFn& attention, const AttentionCase& c,
                                   c10::ScalarType dtype) {
  const AttentionProblem p = MakeProblem(c, dtype);
  const AttentionResult expected = Reference(p);
  const AttentionResult actual = RunAttention(attention, p, dtype);
  const std::string what = c.Describe() + " " + c10::toString(dtype);
  ExpectClose(actual.out, expected.out,
              OutputTolerance(dtype, ScoreMax(p), p.v.abs().max().item<double>()),
              what + " output");
  ExpectClose(actual.dq, expected.dq, GradTolerance(dtype), what + " dq");
  ExpectClose(actual.dk, expected.dk, GradTolerance(dtype), what + " dk");
  ExpectClose(actual.dv, expected.dv, GradTolerance(dtype), what + " dv");
}

// A `tiny` training run of `steps` steps with the attention plugin chosen by `overrides` gives
// per-step losses within a relative `rel_tol` of the same run with eager.
inline void ExpectTinyLossesMatchEager(int64_t steps, const std::vector<std::string>& overrides,
                                       double rel_tol) {
  const auto eager = Losses(Train(TinyRun(steps, {"strategies.attention.plugin=\"eager\""})));
  const auto other = Losses(Train(TinyRun(steps, overrides)));
  ASSERT_EQ(eager.size(), other.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_NEAR(other[i], eager[i], rel_tol * std::abs(eager[i])) << "step " << i;
  }
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
