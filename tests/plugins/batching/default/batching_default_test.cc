#include <gtest/gtest.h>

#include "core/config/config_error.h"
#include "core/config/strategy_resolver.h"
#include "support/run_configs.h"

namespace memsweep {
namespace {

using testing_support::TinyRun;
using testing_support::Losses;
using testing_support::Train;

// The loss is normalised over the real tokens of the whole effective batch, not averaged per
// micro-batch: 16 rows at once and 16 micro-batches of one row give the same updates.
TEST(BatchingDefaultTest, SixteenByOneEqualsOneBySixteen) {
  const config::RunConfig whole_run = TinyRun(3, {"strategies.batching.micro_batch_size=16"});
  const auto whole = Losses(Train(whole_run));
  const auto split = Losses(Train(TinyRun(3, {"strategies.batching.micro_batch_size=1",
                                              "strategies.batching.accumulation_steps=16"})));
  ASSERT_EQ(whole.size(), 3u);
  testing_support::ExpectSameTrajectory(split, whole, testing_support::StepPathTerms(whole_run));
}

TEST(BatchingDefaultTest, ConfiguresTheBatchShape) {
  const config::RunConfig cfg =
      TinyRun(1, {"strategies.batching.micro_batch_size=3", "strategies.batching.seq_len=48",
                  "strategies.batching.accumulation_steps=5",
                  "strategies.batching.padding=max_length"});
  const data::DataConfig& data = cfg.data;  // validated: as the plugin configured it
  EXPECT_EQ(data.micro_batch_size, 3);
  EXPECT_EQ(data.seq_len, 48);
  EXPECT_EQ(data.accumulation_steps, 5);
  EXPECT_EQ(data.padding, data::Padding::kMaxLength);
}

TEST(BatchingDefaultTest, RejectsImpossibleValuesAtValidation) {
  EXPECT_THROW(TinyRun(1, {"strategies.batching.micro_batch_size=0"}), config::ConfigError);
  EXPECT_THROW(TinyRun(1, {"strategies.batching.accumulation_steps=0"}), config::ConfigError);
  EXPECT_THROW(TinyRun(1, {"strategies.batching.padding=left"}), config::ConfigError);
}

}  // namespace
}  // namespace memsweep
