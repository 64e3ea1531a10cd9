// attention/eager folds the softmax scale and the causal mask into one batched GEMM (baddbmm,
// alpha = 1/√d, beta = 1 over a 0/-inf bias) on the CPU. Against the op-by-op form
// (matmul, multiply by the scale, add the bias): when the scale is a power of two (head_dim 16,
// 64, 256) scaling is exact wherever it happens, so outputs and gradients are bitwise equal;
// otherwise the two differ by the rounding of one product. Checked in fp32, under bf16 autocast
// and with bf16 parameters, one document per row and packed.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "attention/eager/eager_attention.h"
#include "support/tolerances.h"

namespace memsweep {
namespace {

// The op-by-op form: scores = (q·kᵀ)·scale + bias; fp32 softmax; probabilities · v.
at::Tensor OpByOp(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const at::Tensor& segment_ids) {
  const int64_t t = q.size(2), d = q.size(3);
  at::Tensor hidden = at::ones({t, t}, at::kBool).triu(1);
  if (segment_ids.defined()) {
    hidden = (hidden.unsqueeze(0) | (segment_ids.unsqueeze(2) != segment_ids.unsqueeze(1)))
                 .unsqueeze(1);
  }
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).mul_(1.0 / std::sqrt(double(d)));
  scores.add_(at::zeros(hidden.sizes(), scores.options())
                  .masked_fill_(hidden, -std::numeric_limits<double>::infinity()));
  const bool bf16 = scores.scalar_type() == at::kBFloat16 && v.scalar_type() == at::kBFloat16;
  const at::Tensor probs = bf16 ? at::softmax(scores, -1)
                               : at::softmax(scores, -1, at::kFloat).to(v.scalar_type());
  return at::matmul(probs, v);
}

struct Outputs {
  at::Tensor out, dq, dk, dv;
};

enum class Mode { kFp32, kAutocast, kBf16 };

Outputs Attend(bool folded, int64_t d, bool packed, Mode mode) {
  const bool autocast = mode == Mode::kAutocast;
  at::manual_seed(7);
  const int64_t b = 2, h = 3, t = 24;
  auto leaf = [&] {
    const at::Tensor x = at::randn({b, t, h, d});
    return (mode == Mode::kBf16 ? x.to(at::kBFloat16) : x).transpose(1, 2).requires_grad_(true);
  };
  const at::Tensor q = leaf(), k = leaf(), v = leaf();
  const at::Tensor grad = at::randn({b, h, t, d});
  at::Tensor segments;
  if (packed) segments = (at::arange(t, at::kLong) / 7).unsqueeze(0).expand({b, t}).contiguous();
  if (autocast) {
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, true);
  }
  at::Tensor out = folded ? plugins::EagerCausalAttention(q, k, v, {{}, segments})
                          : OpByOp(q, k, v, segments);
  if (autocast) {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
  out.backward(grad.to(out.scalar_type()));
  return {out.detach().to(at::kFloat), q.grad().to(at::kFloat), k.grad().to(at::kFloat),
          v.grad().to(at::kFloat)};
}

TEST(EagerScaledGemmTest, PowerOfTwoScalesMatchTheOpByOpFormBitwise) {
  for (int64_t d : {16, 64}) {
    for (bool packed : {false, true}) {
      for (Mode mode : {Mode::kFp32, Mode::kAutocast, Mode::kBf16}) {
        const std::string what = "d=" + std::to_string(d) + (packed ? " packed" : "") +
                                 (mode == Mode::kFp32       ? " fp32"
                                  : mode == Mode::kAutocast ? " bf16-autocast"
                                                            : " bf16");
        const Outputs a = Attend(true, d, packed, mode), b = Attend(false, d, packed, mode);
        EXPECT_TRUE(at::equal(a.out, b.out)) << what;
        EXPECT_TRUE(at::equal(a.dq, b.dq)) << what;
        EXPECT_TRUE(at::equal(a.dk, b.dk)) << what;
        EXPECT_TRUE(at::equal(a.dv, b.dv)) << what;
      }
    }
  }
}

// d = 48: the scale 1/√48 is inexact, so scaling the GEMM's result inside it or after it may
// round differently — by one fp32 rounding of each score (relative 2⁻²⁴), which the softmax and
// the second GEMM carry through with a growth of a few units: 64·u of the output's magnitude
// covers it.
TEST(EagerScaledGemmTest, OtherScalesDifferByOneRounding) {
  const Outputs a = Attend(true, 48, false, Mode::kFp32), b = Attend(false, 48, false, Mode::kFp32);
  const double u = testing_support::kFp32Roundoff;
  EXPECT_LE((a.out - b.out).abs().max().item<double>(), 64 * u * b.out.abs().max().item<double>());
  EXPECT_LE((a.dq - b.dq).abs().max().item<double>(), 64 * u * b.dq.abs().max().item<double>());
}

}  // namespace
}  // namespace memsweep
