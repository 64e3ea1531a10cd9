// oneDNN's fp32 products (core/env/onednn_matmul.h): every operator's result within the fp32
// GEMM bound of a float64 reference, LibTorch's semantics at the edges (broadcast bias, alpha and
// beta, k = 0, empty, transposed and non-contiguous operands), and the same bits every time.
// Skipped, with the reason, on CPUs where oneDNN's fp32 matmul is not available.
#include "core/env/onednn_matmul.h"

#include <ATen/ATen.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <gtest/gtest.h>

#include "support/tolerances.h"

namespace memsweep::env::onednn_matmul_test {
namespace {

using testing_support::Gamma;
using testing_support::kFp32Roundoff;

class OnednnMatmulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnednnFp32Usable()) {
      GTEST_SKIP() << "oneDNN's fp32 matmul is not available here (AVX-512 BW/VL/DQ or "
                      "AVX-NE-CONVERT needed; ONEDNN_MAX_CPU_ISA may rule them out)";
    }
    torch::manual_seed(11);
  }
};

at::Tensor D(const at::Tensor& t) { return t.to(at::kDouble); }

// |got − exact| ≤ γ_k·(Σ|a||b|·|alpha| + ...) elementwise: the k-term fp32 dot product, the
// scaling by alpha, the added beta·self and the final sum (k + 3 roundings in all).
void ExpectWithinBound(const at::Tensor& got, const at::Tensor& exact, const at::Tensor& magnitude,
                       int64_t k, const std::string& what) {
  const at::Tensor bound = Gamma(k + 3, kFp32Roundoff) * magnitude + 1e-30;
  const at::Tensor error = (D(got) - exact).abs();
  EXPECT_TRUE((error <= bound).all().item<bool>())
      << what << ": worst error/bound " << (error / bound).max().item<double>();
}

TEST_F(OnednnMatmulTest, EveryOperatorIsAnFp32GemmWithinTheArithmeticBound) {
  const int64_t m = 256, k = 320, n = 256;  // above kOnednnSmallestProduct
  const at::Tensor a = at::randn({m, k}), b = at::randn({k, n}), bias = at::randn({n});
  const at::Tensor full = at::randn({m, n});
  const at::Tensor mag = at::mm(D(a).abs(), D(b).abs());
  ExpectWithinBound(OnednnMm(a, b), at::mm(D(a), D(b)), mag, k, "mm");
  // linear's forward: the bias broadcast over rows, the weight transposed.
  const at::Tensor w = at::randn({n, k});
  ExpectWithinBound(OnednnAddmm(bias, a, w.t(), 1.0, 1.0), D(bias) + at::mm(D(a), D(w).t()),
                    at::mm(D(a).abs(), D(w).abs().t()) + D(bias).abs(), k, "addmm (linear)");
  ExpectWithinBound(OnednnAddmm(full, a, b, 0.5, 2.0), 0.5 * D(full) + 2.0 * at::mm(D(a), D(b)),
                    2.0 * mag + 0.5 * D(full).abs(), k, "addmm beta 0.5 alpha 2");
  // linear's backward: both operands transposed views.
  const at::Tensor g = at::randn({m, n});
  ExpectWithinBound(OnednnMm(g.t(), a), at::mm(D(g).t(), D(a)), at::mm(D(g).abs().t(), D(a).abs()),
                    m, "mm (transposed)");
  // A non-contiguous operand that is not a transpose (a column slice).
  const at::Tensor wide = at::randn({m, 2 * k});
  const at::Tensor slice = wide.narrow(1, 3, k);
  ExpectWithinBound(OnednnMm(slice, b), at::mm(D(slice), D(b)),
                    at::mm(D(slice).abs(), D(b).abs()), k, "mm (sliced)");
  // bmm / baddbmm as eager attention calls them: scores with a scale and an added causal bias.
  const at::Tensor q = at::randn({24, 128, 64}), kt = at::randn({24, 64, 128});
  const at::Tensor mask = at::randn({128, 128});
  const at::Tensor qmag = at::bmm(D(q).abs(), D(kt).abs());
  ExpectWithinBound(OnednnBmm(q, kt), at::bmm(D(q), D(kt)), qmag, 64, "bmm");
  ExpectWithinBound(OnednnBaddbmm(mask, q, kt, 1.0, 0.125),
                    D(mask) + 0.125 * at::bmm(D(q), D(kt)), 0.125 * qmag + D(mask).abs(), 64,
                    "baddbmm");
}

TEST_F(OnednnMatmulTest, EdgesFollowLibTorchsSemantics) {
  const at::Tensor a = at::randn({40, 0}), b = at::randn({0, 50});
  const at::Tensor self = at::randn({40, 50});
  EXPECT_TRUE(at::equal(OnednnMm(a, b), at::zeros({40, 50})));  // k = 0
  EXPECT_TRUE(at::allclose(OnednnAddmm(self, a, b, 0.5, 1.0), self * 0.5));
  EXPECT_EQ(OnednnMm(at::randn({0, 30}), at::randn({30, 50})).sizes(), at::IntArrayRef({0, 50}));
  // alpha = 0: beta·self only; beta = 0: self ignored, even NaN.
  const at::Tensor big = at::randn({256, 256});
  const at::Tensor x = at::randn({256, 320}), y = at::randn({320, 256});
  EXPECT_TRUE(at::allclose(OnednnAddmm(big, x, y, 2.0, 0.0), big * 2.0));
  const at::Tensor nan = at::full({256, 256}, std::nan(""));
  EXPECT_FALSE(at::isnan(OnednnAddmm(nan, x, y, 0.0, 1.0)).any().item<bool>());
  // Products up to kOnednnSmallestProduct go to LibTorch's kernel: the same bits as it.
  const at::Tensor s1 = at::randn({256, 256}), s2 = at::randn({256, 256});
  EXPECT_TRUE(at::equal(OnednnMm(s1, s2), at::cpu::mm(s1, s2)));
  EXPECT_THROW(OnednnMm(x.to(at::kDouble), y.to(at::kDouble)), c10::Error);
}

TEST_F(OnednnMatmulTest, TheSameProductGivesTheSameBitsEveryTime) {
  const at::Tensor a = at::randn({256, 512}), b = at::randn({512, 384});
  const at::Tensor first = OnednnMm(a, b);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(at::equal(OnednnMm(a, b), first));
}

}  // namespace
}  // namespace memsweep::env::onednn_matmul_test
