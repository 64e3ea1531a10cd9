// attention/sdpa on the CPU: LibTorch 2.11's scaled_dot_product_attention (fused flash kernel for
// unmasked causal calls, math path with the packed-row mask) against the float64 eager reference,
// with grouped-query heads through enable_gqa; the kernels named by `backend`; and short training
// runs against eager.
#include "attention/sdpa/sdpa_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <tuple>

#include "support/run_configs.h"

#include "plugins/attention/attention_test_support.h"

namespace memsweep::plugins {
namespace {

using testing_support::AttentionCase;

class SdpaSweepTest : public ::testing::TestWithParam<c10::ScalarType> {};

TEST_P(SdpaSweepTest, OutputAndGradientsMatchAFloat64Reference) {
  // The fused kernel's online softmax is the bound's worst case of the two kernels.
  testing_support::AttentionRatios worst;
  for (const AttentionCase& c : testing_support::SweepCases()) {
    worst.Fold(testing_support::ExpectMatchesReference(SdpaCausalAttention, c, GetParam(),
                                                       {.online_softmax = true}));
  }
  std::printf("%s\n", worst.Describe().c_str());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SdpaSweepTest, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

// Each backend the CPU has (the flash kernel and the math path), called by name, against the
// float64 reference; the packed cases give flash its mask.
class SdpaCpuBackendTest
    : public ::testing::TestWithParam<std::tuple<SdpaBackend, c10::ScalarType>> {};

TEST_P(SdpaCpuBackendTest, NamedKernelMatchesAFloat64Reference) {
  const auto [backend, dtype] = GetParam();
  SdpaAttention attention(backend);
  const model::AttentionFn fn = [attention](const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v,
                                            const model::AttentionInputs& in) mutable {
    return attention(q, k, v, in);
  };
  testing_support::AttentionRatios worst;
  for (const AttentionCase& c : testing_support::SweepCases()) {
    worst.Fold(testing_support::ExpectMatchesReference(
        fn, c, dtype, {.online_softmax = backend == SdpaBackend::kFlash}));
  }
  std::printf("%s\n", worst.Describe().c_str());
  ASSERT_EQ(attention.Calls().size(), 1u);  // only the named kernel ran
  EXPECT_EQ(attention.Calls().begin()->first, SdpaBackendName(backend));
  EXPECT_GT(attention.Calls().begin()->second, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Backends, SdpaCpuBackendTest,
    ::testing::Combine(::testing::Values(SdpaBackend::kFlash, SdpaBackend::kMath),
                       ::testing::Values(at::kFloat, at::kBFloat16)),
    [](const auto& info) {
      return std::string(SdpaBackendName(std::get<0>(info.param))) + "_" +
             c10::toString(std::get<1>(info.param));
    });

TEST(SdpaAttentionTest, AutoRecordsTheKernelLibTorchChose) {
  SdpaAttention attention(SdpaBackend::kAuto);
  const at::Tensor q = at::randn({1, 4, 32, 16}), k = at::randn({1, 2, 32, 16}),
                   v = at::randn({1, 2, 32, 16});
  attention(q, k, v, {at::arange(32).unsqueeze(0), {}});
  const int64_t expected = at::_fused_sdp_choice(q, k, v, {}, 0.0, true, std::nullopt, true);
  ASSERT_EQ(attention.Calls().size(), 1u);
  EXPECT_EQ(attention.Calls().begin()->first, FusedChoiceName(expected));
  EXPECT_NE(attention.Calls().begin()->first, "none");
}

TEST(SdpaAttentionTest, BackendNamesParseAndUnknownOnesDoNot) {
  for (const char* name : {"auto", "flash", "efficient", "cudnn", "math"}) {
    ASSERT_TRUE(ParseSdpaBackend(name).has_value()) << name;
    EXPECT_STREQ(SdpaBackendName(*ParseSdpaBackend(name)), name);
  }
  EXPECT_FALSE(ParseSdpaBackend("xformers").has_value());
}

TEST(SdpaAttentionTest, TrainingRecordsWhichKernelRan) {
  const train::RunResult r = testing_support::Train(testing_support::TinyRun(
      2, {"strategies.attention.plugin=\"sdpa\"", "strategies.attention.backend=\"math\""}));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  ASSERT_TRUE(r.plugin_metrics.count("sdpa.calls.math"));
  // One call per layer per micro-batch per step (no recompute without checkpointing).
  const int64_t layers = testing_support::TinyRun(1).model.llama.num_hidden_layers;
  EXPECT_EQ(r.plugin_metrics.at("sdpa.calls.math"),
            static_cast<double>(static_cast<int64_t>(r.steps.size()) *
                                r.data.accumulation_steps * layers));
}

TEST(SdpaAttentionTest, TinyTrainingLossesMatchEager) {
  testing_support::ExpectTinyLossesMatchEager(3, {"strategies.attention.plugin=\"sdpa\""});
}

}  // namespace
}  // namespace memsweep::plugins
