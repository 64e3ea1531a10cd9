// attention/sdpa on the CPU: LibTorch 2.11's scaled_dot_product_attention (fused flash kernel for
// unmasked causal calls, math path with the packed-row mask) against the float64 eager reference,
// with grouped-query heads through enable_gqa; and a short training run against eager.
#include "attention/sdpa/sdpa_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>

#include "plugins/attention/attention_test_support.h"

namespace memsweep::plugins {
namespace {

using testing_support::AttentionCase;

class SdpaSweepTest : public ::testing::TestWithParam<c10::ScalarType> {};

TEST_P(SdpaSweepTest, OutputAndGradientsMatchAFloat64Reference) {
  for (const AttentionCase& c : testing_support::SweepCases()) {
    testing_support::ExpectMatchesReference(SdpaCausalAttention, c, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SdpaSweepTest, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(SdpaAttentionTest, TinyTrainingLossesMatchEager) {
  testing_support::ExpectTinyLossesMatchEager(3, {"strategies.attention.plugin=\"sdpa\""}, 1e-5);
}

}  // namespace
}  // namespace memsweep::plugins
