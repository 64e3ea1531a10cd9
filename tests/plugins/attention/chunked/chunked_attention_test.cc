#include "attention/chunked/chunked_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
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
  // Blocks of one row in bf16 send the products to ATen's bf16 matrix-vector kernels, which
  // round far more than the tolerance allows (dq errors ~0.6): an ATen limit, not chunking's.
  const std::vector<int64_t> blocks =
      GetParam() == at::kBFloat16 ? std::vector<int64_t>{16, 128} : std::vector<int64_t>{1, 16, 128};
  for (const AttentionCase& c : testing_support::SweepCases()) {
    for (int64_t block : blocks) {
      SCOPED_TRACE("block=" + std::to_string(block));
      testing_support::ExpectMatchesReference(MakeChunkedAttention(block), c, GetParam());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ChunkedSweepTest, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(ChunkedAttentionTest, TinyTrainingLossesMatchEager) {
  testing_support::ExpectTinyLossesMatchEager(
      3, {"strategies.attention.plugin=\"chunked\"", "strategies.attention.block_size=16"}, 1e-5);
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
