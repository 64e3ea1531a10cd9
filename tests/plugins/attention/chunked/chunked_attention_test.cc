#include "attention/chunked/chunked_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "plugins/attention/attention_test_support.h"
#include "support/run_configs.h"

namespace memsweep::plugins {
namespace {

using testing_support::AttentionCase;
using testing_support::TinyRun;
using testing_support::Train;

class ChunkedSweepTest : public ::testing::TestWithParam<c10::ScalarType> {};

TEST_P(ChunkedSweepTest, OutputAndGradientsMatchAFloat64Reference) {
  testing_support::AttentionRatios worst;
  for (const AttentionCase& c : testing_support::SweepCases()) {
    for (int64_t block : {1, 16, 128}) {
      SCOPED_TRACE("block=" + std::to_string(block));
      // Each query block's share of dk and dv is rounded to the dtype and autograd adds the
      // blocks' shares in that dtype: one rounded partial sum per block.
      const int64_t blocks = (c.seq_len + block - 1) / block;
      worst.Fold(testing_support::ExpectMatchesReference(MakeChunkedAttention(block), c, GetParam(),
                                                         {.kv_grad_partials = blocks}));
    }
  }
  std::printf("%s\n", worst.Describe().c_str());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ChunkedSweepTest, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(ChunkedAttentionTest, TinyTrainingLossesMatchEager) {
  testing_support::ExpectTinyLossesMatchEager(
      3, {"strategies.attention.plugin=\"chunked\"", "strategies.attention.block_size=16"});
}

TEST(ChunkedAttentionTest, RejectsABlockSizeOutOfRange) {
  try {
    Train(TinyRun(1, {"strategies.attention.plugin=\"chunked\"",
                      "strategies.attention.block_size=0"}));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("block_size = 0 is out of range"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memsweep::plugins
