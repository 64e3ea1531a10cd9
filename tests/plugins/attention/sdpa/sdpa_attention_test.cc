// attention/sdpa on the CPU: LibTorch 2.11's scaled_dot_product_attention (fused flash kernel for
// unmasked causal calls, math path with the packed-row mask) against the float64 eager reference,
// with grouped-query heads through enable_gqa; and a short training run against eager.
#include "attention/sdpa/sdpa_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "plugins/attention/attention_test_support.h"
#include "support/run_configs.h"

namespace memsweep::plugins {
namespace {

using testing_support::AttentionCase;
using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

class SdpaSweepTest : public ::testing::TestWithParam<c10::ScalarType> {};

TEST_P(SdpaSweepTest, OutputAndGradientsMatchAFloat64Reference) {
  for (const AttentionCase& c : testing_support::SweepCases()) {
    testing_support::ExpectMatchesReference(SdpaCausalAttention, c, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SdpaSweepTest, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(SdpaAttentionTest, TinyTrainingLossesMatchEager) {
  const auto eager = Losses(Train(TinyRun(3, {"strategies.attention.plugin=\"eager\""})));
  const auto sdpa = Losses(Train(TinyRun(3, {"strategies.attention.plugin=\"sdpa\""})));
  ASSERT_EQ(eager.size(), sdpa.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_NEAR(sdpa[i], eager[i], 1e-5 * std::abs(eager[i])) << "step " << i;
  }
}

}  // namespace
}  // namespace memsweep::plugins
