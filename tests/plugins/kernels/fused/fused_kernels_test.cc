// kernels/fused against the compositions it replaces: the model's own RMSNorm module and
// silu(gate) * up — values and gradients in fp32 within 1e-6 (relative, norm-wise) and in bf16
// within one bf16 rounding; training runs that follow kernels/aten's losses; and the bytes kept
// for backward, at the end of a forward pass, against fused_kernels.h's formula.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/model/llama.h"
#include "core/results/loss_verification.h"
#include "kernels/fused/fused_kernels.h"
#include "support/run_configs.h"

namespace memsweep::fused_kernels_test {
namespace {

using plugins::kernels::FusedRmsNorm;
using plugins::kernels::FusedSwiGlu;
using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

// ‖a − b‖ / ‖b‖, in double.
double RelativeError(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  return (a64 - b64).norm().item<double>() / b64.norm().item<double>();
}

struct Outcome {
  at::Tensor out, grad_a, grad_b;
};

// The model's own RMSNorm over x with weight w, and its gradients for `grad_out`.
Outcome ModelRmsNorm(const at::Tensor& x0, const at::Tensor& w0, double eps,
                     const at::Tensor& grad_out) {
  model::RmsNorm norm(x0.size(-1), eps);
  norm->to(w0.scalar_type());
  at::Tensor weight = norm->named_parameters()["weight"];
  {
    at::NoGradGuard no_grad;
    weight.copy_(w0);
  }
  const at::Tensor x = x0.detach().clone().requires_grad_(true);
  const at::Tensor out = norm->forward(x);
  out.backward(grad_out);
  return {out.detach(), x.grad(), weight.grad()};
}

Outcome FusedNorm(const at::Tensor& x0, const at::Tensor& w0, double eps,
                  const at::Tensor& grad_out) {
  const at::Tensor x = x0.detach().clone().requires_grad_(true);
  const at::Tensor w = w0.detach().clone().requires_grad_(true);
  const at::Tensor out = FusedRmsNorm(x, w, eps);
  out.backward(grad_out);
  return {out.detach(), x.grad(), w.grad()};
}

Outcome SwiGlu(const at::Tensor& g0, const at::Tensor& u0, const at::Tensor& grad_out,
               bool fused) {
  const at::Tensor g = g0.detach().clone().requires_grad_(true);
  const at::Tensor u = u0.detach().clone().requires_grad_(true);
  const at::Tensor out = fused ? FusedSwiGlu(g, u) : at::silu(g) * u;
  out.backward(grad_out);
  return {out.detach(), g.grad(), u.grad()};
}

void ExpectClose(const Outcome& fused, const Outcome& reference, double bound,
                 const std::string& what) {
  const double out = RelativeError(fused.out, reference.out);
  const double a = RelativeError(fused.grad_a, reference.grad_a);
  const double b = RelativeError(fused.grad_b, reference.grad_b);
  EXPECT_LE(out, bound) << what << ": values";
  EXPECT_LE(a, bound) << what << ": first input's gradient";
  EXPECT_LE(b, bound) << what << ": second input's gradient";
  std::printf("%s: relative error of values %.3g, gradients %.3g and %.3g (bound %.3g)\n",
              what.c_str(), out, a, b, bound);
}

// bf16 keeps 8 significant bits: one rounding of a result is at most 2^-8 of it. Both sides
// compute the same fp32 values (the same operations) and round each stored tensor once, so
// whatever they differ by is at most one rounding per element.
constexpr double kOneBf16Rounding = 1.0 / 256;

TEST(FusedKernelsTest, RmsNormMatchesTheModelsOwnInFp32AndBf16) {
  at::manual_seed(7);
  const at::Tensor x = at::randn({3, 17, 64});
  const at::Tensor w = 1 + 0.1 * at::randn({64});
  const at::Tensor grad = at::randn({3, 17, 64});
  ExpectClose(FusedNorm(x, w, 1e-5, grad), ModelRmsNorm(x, w, 1e-5, grad), 1e-6, "rmsnorm fp32");
  const at::Tensor xb = x.to(at::kBFloat16), wb = w.to(at::kBFloat16), gb = grad.to(at::kBFloat16);
  ExpectClose(FusedNorm(xb, wb, 1e-5, gb), ModelRmsNorm(xb, wb, 1e-5, gb), kOneBf16Rounding,
              "rmsnorm bf16");
}

TEST(FusedKernelsTest, SwiGluMatchesTheCompositionInFp32AndBf16) {
  at::manual_seed(8);
  const at::Tensor g = 2 * at::randn({3, 17, 172});
  const at::Tensor u = at::randn({3, 17, 172});
  const at::Tensor grad = at::randn({3, 17, 172});
  ExpectClose(SwiGlu(g, u, grad, true), SwiGlu(g, u, grad, false), 1e-6, "swiglu fp32");
  const at::Tensor gb = g.to(at::kBFloat16), ub = u.to(at::kBFloat16), db = grad.to(at::kBFloat16);
  ExpectClose(SwiGlu(gb, ub, db, true), SwiGlu(gb, ub, db, false), kOneBf16Rounding,
              "swiglu bf16");
}

// A frozen weight (an adapter's base) gets no gradient, and x's is unchanged.
TEST(FusedKernelsTest, AFrozenNormWeightGetsNoGradient) {
  at::manual_seed(9);
  const at::Tensor x = at::randn({2, 5, 64}).requires_grad_(true);
  const at::Tensor w = at::ones({64});
  FusedRmsNorm(x, w, 1e-6).sum().backward();
  EXPECT_FALSE(w.grad().defined());
  ASSERT_TRUE(x.grad().defined());
  const at::Tensor x2 = x.detach().clone().requires_grad_(true);
  const at::Tensor normed = x2 * at::rsqrt(x2.pow(2).mean(-1, true) + 1e-6);
  normed.sum().backward();
  EXPECT_LE(RelativeError(x.grad(), x2.grad()), 1e-6);
}

std::vector<std::string> With(std::vector<std::string> base, const std::string& kernels) {
  base.push_back("strategies.kernels.plugin=\"" + kernels + "\"");
  return base;
}

void ExpectFollowsAten(const std::vector<std::string>& setting, double rtol,
                       const std::string& what) {
  const std::vector<double> aten = Losses(Train(TinyRun(5, With(setting, "aten"))));
  const std::vector<double> fused = Losses(Train(TinyRun(5, With(setting, "fused"))));
  ASSERT_EQ(fused.size(), aten.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < aten.size(); ++i) {
    const double rel = std::abs(fused[i] - aten[i]) / std::abs(aten[i]);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, rtol) << what << " step " << i << ": " << fused[i] << " vs " << aten[i];
  }
  std::printf("%s: largest relative deviation from kernels/aten %.3g\n", what.c_str(), worst);
}

TEST(FusedKernelsTrainingTest, FollowsTheModelsOwnKernelsInFp32) {
  ExpectFollowsAten({}, 1e-6, "fp32");
  ExpectFollowsAten({"strategies.checkpointing.plugin=\"full\"",
                     "strategies.batching.accumulation_steps=2"},
                    1e-6, "fp32, checkpointing, accumulation 2");
  ExpectFollowsAten({"strategies.adapter.plugin=\"lora\"", "strategies.adapter.rank=4"}, 1e-6,
                    "fp32, LoRA (frozen norms)");
}

TEST(FusedKernelsTrainingTest, FollowsTheModelsOwnKernelsInBf16) {
  const double bf16 = results::ApproximateTolerance("bfloat16").value();
  ExpectFollowsAten({"strategies.precision.plugin=\"bf16-autocast\""}, bf16, "bf16-autocast");
  ExpectFollowsAten({"strategies.precision.plugin=\"bf16\""}, bf16, "bf16");
}

// Allocated bytes at the end of step 0's forward stage: the model state plus what the forward
// pass keeps for backward.
int64_t AfterForward(const train::RunResult& r) {
  for (const train::TimelinePoint& p : r.timeline) {
    if (p.step == 0 && std::string(p.stage) == "forward") return p.allocated_bytes;
  }
  ADD_FAILURE() << "no forward stage in step 0";
  return 0;
}

// fused_kernels.h: per token, 4·hidden bytes fewer for each RMSNorm (two per layer and the
// final one) and s·intermediate for each SwiGLU, s the bytes of the MLP's compute dtype.
void ExpectSavedBytes(const std::vector<std::string>& setting, int64_t mlp_bytes,
                      const std::string& what) {
  const config::RunConfig cfg = TinyRun(1, With(setting, "aten"));
  const train::RunResult aten = Train(cfg);
  const train::RunResult fused = Train(TinyRun(1, With(setting, "fused")));
  ASSERT_EQ(aten.status, train::RunStatus::kOk) << aten.error;
  ASSERT_EQ(fused.status, train::RunStatus::kOk) << fused.error;
  const model::LlamaConfig& m = cfg.model.llama;
  const int64_t tokens = 4 * 64;  // TinyRun's micro-batch: 4 rows of 64, none padded
  const int64_t per_token =
      m.num_hidden_layers * (2 * 4 * m.hidden_size + mlp_bytes * m.intermediate_size) +
      4 * m.hidden_size;
  EXPECT_EQ(AfterForward(aten) - AfterForward(fused), tokens * per_token) << what;
  std::printf("%s: %lld bytes fewer after the forward pass = %lld tokens x %lld bytes (%lld per "
              "token and layer, hidden %lld, intermediate %lld)\n",
              what.c_str(), static_cast<long long>(AfterForward(aten) - AfterForward(fused)),
              static_cast<long long>(tokens), static_cast<long long>(per_token),
              static_cast<long long>(2 * 4 * m.hidden_size + mlp_bytes * m.intermediate_size),
              static_cast<long long>(m.hidden_size), static_cast<long long>(m.intermediate_size));
  EXPECT_LT(fused.memory.activations_bytes, aten.memory.activations_bytes) << what;
}

TEST(FusedKernelsTrainingTest, KeepsTheFormulasBytesFewerForBackward) {
  ExpectSavedBytes({}, 4, "fp32");
  // Under autocast the residual stream stays fp32 (the norms' inputs) while the MLP's
  // projections come out in bf16.
  ExpectSavedBytes({"strategies.precision.plugin=\"bf16-autocast\""}, 2, "bf16-autocast");
  // bf16 parameters: the norms' inputs are bf16 too; the composition keeps an fp32 copy (4 B)
  // and the bf16 normalised value (2 B) where the fused norm keeps the bf16 input (2 B).
  ExpectSavedBytes({"strategies.precision.plugin=\"bf16\""}, 2, "bf16");
}

}  // namespace
}  // namespace memsweep::fused_kernels_test
