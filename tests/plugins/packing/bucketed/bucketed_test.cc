#include "packing/bucketed/bucketed_batch_source.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "memsweep/epoch_order.h"
#include "plugins/packing/packing_test_support.h"
#include "support/run_configs.h"

namespace memsweep::plugins::packing {
namespace {

using testing_support::DevilsDictionary;
using testing_support::RowOf;
using testing_support::Sorted;
using testing_support::SpansOf;

BucketOptions Options(int64_t max_tokens, std::vector<int64_t> boundaries = {},
                      int64_t max_rows = 0) {
  BucketOptions options;
  options.max_tokens = max_tokens;
  options.boundaries = std::move(boundaries);
  options.max_rows = max_rows;
  return options;
}

// Positions of a row: its real targets (padding only at the end).
int64_t RowPositions(const data::Batch& batch, int64_t row) {
  return batch.targets[row].ne(data::kIgnoreIndex).sum().item<int64_t>();
}

TEST(BucketedTest, MicroBatchesStayUnderTheTokenBudgetWithinOneBucket) {
  const data::DataConfig config = DevilsDictionary(/*seq_len=*/512, /*micro_batch_size=*/4);
  BucketedBatchSource source(config, /*seed=*/2, Options(2048, {64, 128, 256}));
  EXPECT_EQ(source.Boundaries(), (std::vector<int64_t>{64, 128, 256, 512}));
  std::vector<int64_t> rows_seen;
  for (int i = 0; i < 100; ++i) {
    const data::Batch batch = source.Next();
    ASSERT_LE(batch.positions, 2048) << i;
    ASSERT_LE(batch.Length(), 512);
    EXPECT_TRUE(batch.Length() % 8 == 0 || batch.Length() == 512) << batch.Length();
    EXPECT_EQ(batch.real_tokens, batch.targets.ne(data::kIgnoreIndex).sum().item<int64_t>());
    EXPECT_EQ(batch.positions, batch.Rows() * batch.Length());
    // Every row of the micro-batch comes from the same bucket.
    std::vector<int64_t> buckets;
    for (int64_t r = 0; r < batch.Rows(); ++r) {
      const int64_t positions = RowPositions(batch, r);
      buckets.push_back(std::lower_bound(source.Boundaries().begin(), source.Boundaries().end(),
                                         positions) - source.Boundaries().begin());
    }
    EXPECT_EQ(*std::min_element(buckets.begin(), buckets.end()),
              *std::max_element(buckets.begin(), buckets.end())) << i;
    rows_seen.push_back(batch.Rows());
  }
  // Short documents make many rows, long ones few: the row count really varies.
  EXPECT_LT(*std::min_element(rows_seen.begin(), rows_seen.end()), 8);
  EXPECT_GT(*std::max_element(rows_seen.begin(), rows_seen.end()), 16);
}

// Nothing is lost or duplicated: what was served plus what still waits in the buckets is exactly
// what the epoch order drew, document for document.
TEST(BucketedTest, ServesEveryDrawnDocumentExactlyOnce) {
  const data::DataConfig config = DevilsDictionary(/*seq_len=*/256, /*micro_batch_size=*/4);
  BucketedBatchSource source(config, /*seed=*/4, Options(1024));
  std::map<std::vector<int32_t>, std::vector<int64_t>> index_of;  // content -> sequence indices
  const auto& sequences = source.Sequences();
  for (int64_t s = 0; s < sequences.Count(); ++s) {
    index_of[{sequences.Data(s), sequences.Data(s) + sequences.Length(s)}].push_back(s);
  }
  std::vector<std::vector<int32_t>> served;
  for (int i = 0; i < 300; ++i) {  // beyond the first epoch
    for (auto& span : SpansOf(source.Next())) served.push_back(std::move(span));
  }
  std::vector<std::vector<int32_t>> accounted = served;
  for (int64_t s : source.Waiting()) {
    accounted.emplace_back(sequences.Data(s), sequences.Data(s) + sequences.Length(s));
  }
  data::EpochOrder order(sequences.Count(), /*seed=*/4);
  std::vector<std::vector<int32_t>> drawn;
  for (size_t i = 0; i < accounted.size(); ++i) {
    const int64_t s = order.Next();
    drawn.emplace_back(sequences.Data(s), sequences.Data(s) + sequences.Length(s));
  }
  EXPECT_GT(served.size(), static_cast<size_t>(sequences.Count()));
  EXPECT_EQ(Sorted(accounted), Sorted(drawn));
}

TEST(BucketedTest, MaxLengthPadsToTheBucketBoundaryAndMaxRowsCapsRows) {
  const data::DataConfig config = DevilsDictionary(256, 4, data::Padding::kMaxLength);
  BucketedBatchSource source(config, /*seed=*/6, Options(4096, {64, 128}, /*max_rows=*/5));
  for (int i = 0; i < 50; ++i) {
    const data::Batch batch = source.Next();
    EXPECT_TRUE(batch.Length() == 64 || batch.Length() == 128 || batch.Length() == 256)
        << batch.Length();
    EXPECT_LE(batch.Rows(), 5);
  }
}

TEST(BucketedTest, DefaultBudgetIsOneMaxLengthMicroBatch) {
  BucketedBatchSource source(DevilsDictionary(128, 6), /*seed=*/1, Options(0));
  EXPECT_EQ(source.MaxTokens(), 6 * 128);
  EXPECT_EQ(source.Boundaries(), (std::vector<int64_t>{32, 64, 128}));
}

TEST(BucketedTest, SameSeedSameMicroBatches) {
  const data::DataConfig config = DevilsDictionary(256, 4);
  BucketedBatchSource a(config, 8, Options(1024)), b(config, 8, Options(1024));
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(at::equal(a.Next().input_ids, b.Next().input_ids)) << i;
}

TEST(BucketedTest, RejectsBadBoundariesAndABudgetBelowOneRow) {
  EXPECT_EQ(ParseBoundaries(" 64, 128 ,256"), (std::vector<int64_t>{64, 128, 256}));
  EXPECT_TRUE(ParseBoundaries("").empty());
  EXPECT_THROW(ParseBoundaries("64,32"), std::invalid_argument);
  EXPECT_THROW(ParseBoundaries("64,,128"), std::invalid_argument);
  EXPECT_THROW(ParseBoundaries("64,x"), std::invalid_argument);
  EXPECT_THROW(ParseBoundaries("0"), std::invalid_argument);
  EXPECT_THROW(BucketedBatchSource(DevilsDictionary(256, 4), 1, Options(255)),
               std::invalid_argument);
  EXPECT_THROW(testing_support::TinyRun(1, {"strategies.packing.plugin=\"bucketed\"",
                                            "strategies.packing.boundaries=\"128,64\""}),
               config::ConfigError);
}

// A run: rows per step vary, every micro-batch fits the budget, and less is padded than with one
// document per row padded to the longest of 4.
TEST(BucketedTest, TrainsWithVaryingRowsAndLessPadding) {
  const std::vector<std::string> common = {"strategies.batching.seq_len=256",
                                           "strategies.batching.micro_batch_size=4",
                                           "strategies.batching.accumulation_steps=2"};
  std::vector<std::string> bucketed = common;
  bucketed.push_back("strategies.packing.plugin=\"bucketed\"");
  const train::RunResult r = testing_support::Train(testing_support::TinyRun(6, bucketed));
  const train::RunResult none = testing_support::Train(testing_support::TinyRun(6, common));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  ASSERT_EQ(none.status, train::RunStatus::kOk) << none.error;
  int64_t fewest = r.steps[0].rows, most = r.steps[0].rows;
  for (const auto& step : r.steps) {
    EXPECT_LE(step.positions, 2 * 4 * 256);  // accumulation_steps x max_tokens
    fewest = std::min(fewest, step.rows);
    most = std::max(most, step.rows);
  }
  EXPECT_LT(fewest, most);
  EXPECT_LT(r.summary.padding_fraction, none.summary.padding_fraction);
  EXPECT_GT(r.plugin_metrics.at("bucketed.micro_batches"), 0);
}

}  // namespace
}  // namespace memsweep::plugins::packing
