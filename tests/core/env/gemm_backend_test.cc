#include "core/env/gemm_backend.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "core/env/environment.h"

namespace memsweep::env {
namespace {

class GemmBackendTest : public ::testing::TestWithParam<GemmBackend> {
 protected:
  void SetUp() override { SetGemmBackend(GetParam()); }
  void TearDown() override { SetGemmBackend(GemmBackend::kOneDnn); }
};

TEST_P(GemmBackendTest, LibTorchMatmulsGoThroughTheShim) {
  EXPECT_TRUE(GemmShimActive());
}

TEST_P(GemmBackendTest, AllTransposeCasesMatchAFloat64Reference) {
  // Odd sizes exercise edge handling; transposed views make LibTorch pass 'T' to sgemm_.
  const at::Tensor a = at::randn({37, 53});
  const at::Tensor b = at::randn({53, 29});
  const at::Tensor expected = at::mm(a.to(at::kDouble), b.to(at::kDouble));
  const at::Tensor at_ = a.t().contiguous(), bt = b.t().contiguous();
  const std::vector<std::pair<at::Tensor, at::Tensor>> cases = {
      {a, b}, {at_.t(), b}, {a, bt.t()}, {at_.t(), bt.t()}};
  for (const auto& [x, y] : cases) {
    const int64_t calls = GemmShimCalls();
    const at::Tensor got = at::mm(x, y);
    EXPECT_GT(GemmShimCalls(), calls);
    EXPECT_LT((got.to(at::kDouble) - expected).abs().max().item<double>(), 1e-4);
  }
}

TEST_P(GemmBackendTest, BetaZeroIgnoresGarbageInTheOutput) {
  const at::Tensor a = at::randn({16, 16});
  at::Tensor out = at::full({16, 16}, std::nanf(""));
  at::mm_out(out, a, a);
  EXPECT_FALSE(out.isnan().any().item<bool>());
  EXPECT_TRUE(at::allclose(out, at::mm(a.to(at::kDouble), a.to(at::kDouble)).to(at::kFloat),
                           1e-4, 1e-4));
}

TEST_P(GemmBackendTest, AddmmScalesBothTerms) {
  const at::Tensor c = at::randn({8, 6}), a = at::randn({8, 5}), b = at::randn({5, 6});
  const at::Tensor got = at::addmm(c, a, b, /*beta=*/0.5, /*alpha=*/2.0);
  const at::Tensor expected = 0.5 * c.to(at::kDouble) + 2.0 * at::mm(a.to(at::kDouble),
                                                                      b.to(at::kDouble));
  EXPECT_LT((got.to(at::kDouble) - expected).abs().max().item<double>(), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Backends, GemmBackendTest,
                         ::testing::Values(GemmBackend::kOneDnn, GemmBackend::kSystemBlas),
                         [](const auto& info) { return GemmBackendName(info.param); });

TEST(EnvironmentTest, DescribesThisMachine) {
  const EnvironmentInfo info = DescribeEnvironment();
  EXPECT_GT(info.cores, 0);
  EXPECT_FALSE(info.torch_version.empty());
  EXPECT_FALSE(info.blas_library.empty()) << "no system sgemm_ found behind the shim";
  EXPECT_NE(info.blas_kind, "unknown") << info.blas_library;
}

TEST(GemmBackendNameTest, RoundTrips) {
  EXPECT_EQ(ParseGemmBackend("onednn"), GemmBackend::kOneDnn);
  EXPECT_EQ(ParseGemmBackend("blas"), GemmBackend::kSystemBlas);
  EXPECT_FALSE(ParseGemmBackend("mkl").has_value());
}

}  // namespace
}  // namespace memsweep::env
