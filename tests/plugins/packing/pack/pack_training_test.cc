#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "support/run_configs.h"

namespace memsweep {
namespace {

using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

// 2 packed rows of 256 positions per micro-batch, 2 micro-batches per step: ~6 documents a step.
std::vector<std::string> PackRun(const std::string& layout, const std::string& long_documents) {
  return {"strategies.packing.plugin=\"pack\"",
          "strategies.packing.window=200",
          "strategies.packing.layout=\"" + layout + "\"",
          "strategies.packing.long_documents=\"" + long_documents + "\"",
          "strategies.batching.seq_len=256",
          "strategies.batching.micro_batch_size=2",
          "strategies.batching.accumulation_steps=2"};
}

// The key property of packing: packed rows and the same documents one per row (layout = padded,
// exactly the documents of each packed micro-batch) give the same loss at every step, to float32
// rounding, because each document attends only to itself, its positions restart and its targets
// stay inside it; the loss is normalised over the real tokens of the whole step either way.
TEST(PackTrainingTest, PackedLossEqualsUnpackedLossWithTheSameDocumentsPerStep) {
  for (const char* long_documents : {"truncate", "split"}) {
    const train::RunResult packed = Train(TinyRun(3, PackRun("packed", long_documents)));
    const train::RunResult padded = Train(TinyRun(3, PackRun("padded", long_documents)));
    ASSERT_EQ(packed.status, train::RunStatus::kOk) << packed.error;
    ASSERT_EQ(padded.status, train::RunStatus::kOk) << padded.error;
    const auto a = Losses(packed), b = Losses(padded);
    ASSERT_EQ(a.size(), 3u);
    double largest = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      largest = std::max(largest, std::abs(a[i] - b[i]) / std::abs(b[i]));
      EXPECT_EQ(packed.steps[i].tokens, padded.steps[i].tokens) << long_documents << " step " << i;
    }
    // The same sums in another order (padding adds exact zeros): the rounding path of a packed
    // step, whose rows hold every real token of the step.
    testing_support::ExpectSameTrajectory(
        a, b, testing_support::StepPathTerms(TinyRun(3, PackRun("packed", long_documents))),
        long_documents);
    std::printf("long_documents=%s: largest relative loss difference per step %.2e\n",
                long_documents, largest);
    // Same documents, far fewer positions: the packed run pads almost nothing.
    EXPECT_LT(packed.summary.padding_fraction, 0.05) << long_documents;
    EXPECT_GT(padded.summary.padding_fraction, packed.summary.padding_fraction + 0.1);
    EXPECT_LT(packed.steps[0].rows, padded.steps[0].rows);
    EXPECT_GT(packed.plugin_metrics.at("pack.documents"), packed.plugin_metrics.at("pack.rows"));
  }
}

// Throughput counts real tokens only: the step's tokens are its targets that take a loss.
TEST(PackTrainingTest, PaddingFractionAndTokensCountRealTokensOnly) {
  const train::RunResult r = Train(TinyRun(3, PackRun("packed", "truncate")));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  int64_t tokens = 0, positions = 0;
  for (const auto& step : r.steps) {
    EXPECT_LE(step.tokens, step.positions);
    EXPECT_EQ(step.rows, 4);
    tokens += step.tokens;
    positions += step.positions;
  }
  EXPECT_DOUBLE_EQ(r.summary.padding_fraction,
                   1.0 - static_cast<double>(tokens) / static_cast<double>(positions));
}

TEST(PackTrainingTest, RejectsUnknownOptionValuesAtValidation) {
  EXPECT_THROW(TinyRun(1, {"strategies.packing.plugin=\"pack\"", "strategies.packing.window=0"}),
               config::ConfigError);
  EXPECT_THROW(TinyRun(1, {"strategies.packing.plugin=\"pack\"",
                           "strategies.packing.algorithm=\"nfd\""}),
               config::ConfigError);
  EXPECT_THROW(TinyRun(1, {"strategies.packing.plugin=\"pack\"",
                           "strategies.packing.layout=\"mixed\""}),
               config::ConfigError);
  EXPECT_THROW(TinyRun(1, {"strategies.packing.plugin=\"pack\"",
                           "strategies.packing.long_documents=\"drop\""}),
               config::ConfigError);
}

}  // namespace
}  // namespace memsweep
