// The SDK's AdamW update: the fused one-pass loop (contiguous fp32 CPU tensors) against the
// op-by-op form it replaces (taken for strided tensors). The two round differently — LibTorch's
// vectorised add/addcmul/addcdiv kernels fuse a multiply into the add (one rounding where the
// loop has two) — so they agree within rounding, not bitwise. From one shared state, one step:
// m = β1·m + (1−β1)·g and v = β2·v + (1−β2)·g² are each within 2u of their terms' magnitudes
// (u = 2⁻²⁴: at most one rounding more or less per product and sum); the update of p adds the
// relative error of m/(√v/√b2 + ε) — from m (2u), v (halved by the root: u), the root, the
// scaling, the eps sum and the division (4u) — 8u of |step·m/denom|, and 2u of |p·decay|.
// The host's AdamW and the sharding plugins call the same function, so they stay bitwise equal
// to each other (tests/plugins/sharding/).
#include "memsweep/adamw_update.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "support/tolerances.h"

namespace memsweep {
namespace {

TEST(AdamWUpdateTest, TheFusedPassFollowsTheOpByOpFormWithinRounding) {
  at::manual_seed(11);
  const int64_t n = 100003;  // not a multiple of any vector width
  const double u = testing_support::kFp32Roundoff;
  const AdamWHyperparameters h{3e-3, 0.9, 0.95, 1e-8, 0.1};
  at::Tensor p = at::randn({n}), m = at::randn({n}) * 0.1, v = at::rand({n}) * 0.01;
  for (int64_t step = 1; step <= 5; ++step) {
    const at::Tensor g = at::randn({n});
    // Columns 0 of [n, 2] tensors: the same state, strided, so the op-by-op form runs on them.
    at::Tensor sp = at::empty({n, 2}), sm = at::empty({n, 2}), sv = at::empty({n, 2});
    sp.select(1, 0).copy_(p);
    sm.select(1, 0).copy_(m);
    sv.select(1, 0).copy_(v);
    const at::Tensor p0 = p.to(at::kDouble), m0 = m.to(at::kDouble), v0 = v.to(at::kDouble);
    const at::Tensor g0 = g.to(at::kDouble);
    AdamWUpdate(p, g, m, v, h, step);
    AdamWUpdate(sp.select(1, 0), g, sm.select(1, 0), sv.select(1, 0), h, step);
    const at::Tensor rp = sp.select(1, 0).to(at::kDouble), rm = sm.select(1, 0).to(at::kDouble);
    const at::Tensor rv = sv.select(1, 0).to(at::kDouble);
    const at::Tensor m_bound = 6 * u * ((m0 * h.beta1).abs() + (g0 * (1 - h.beta1)).abs());
    const at::Tensor v_bound = 8 * u * ((v0 * h.beta2).abs() + (g0 * g0 * (1 - h.beta2)).abs());
    const double bias1 = 1 - std::pow(h.beta1, step), bias2 = 1 - std::pow(h.beta2, step);
    const at::Tensor update =
        (h.lr / bias1) * rm.abs() / (rv.sqrt() / std::sqrt(bias2) + h.eps);
    const at::Tensor p_bound = 2 * u * (p0 * (1 - h.lr * h.weight_decay)).abs() + 16 * u * update;
    EXPECT_LE(((m.to(at::kDouble) - rm).abs() - m_bound).max().item<double>(), 0.0) << step;
    EXPECT_LE(((v.to(at::kDouble) - rv).abs() - v_bound).max().item<double>(), 0.0) << step;
    EXPECT_LE(((p.to(at::kDouble) - rp).abs() - p_bound).max().item<double>(), 0.0) << step;
  }
}

// One element by hand (float64): decay, moments, bias correction.
TEST(AdamWUpdateTest, OneElementFollowsTheFormula) {
  at::Tensor p = at::full({1}, 1.0f), m = at::zeros({1}), v = at::zeros({1});
  const at::Tensor g = at::full({1}, 0.5f);
  const AdamWHyperparameters h{0.1, 0.9, 0.99, 1e-8, 0.01};
  AdamWUpdate(p, g, m, v, h, 1);
  const double m1 = 0.1 * 0.5, v1 = 0.01 * 0.25;
  const double expected =
      1.0 * (1 - 0.1 * 0.01) - 0.1 / 0.1 * m1 / (std::sqrt(v1) / std::sqrt(0.01) + 1e-8);
  EXPECT_NEAR(m.item<double>(), m1, 2 * testing_support::kFp32Roundoff * m1);
  EXPECT_NEAR(v.item<double>(), v1, 2 * testing_support::kFp32Roundoff * v1);
  EXPECT_NEAR(p.item<double>(), expected, 8 * testing_support::kFp32Roundoff);
}

}  // namespace
}  // namespace memsweep
