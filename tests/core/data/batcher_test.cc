#include "memsweep/batcher.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/data/byte_tokenizer.h"
#include "core/data/document_source.h"
#include "core/data/token_file.h"

namespace memsweep::data {
namespace {

std::string TempPath(const std::string& suffix) {
  const testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
  return testing::TempDir() + "memsweep_" + test->test_suite_name() + "_" + test->name() + suffix;
}

// A JSONL data config whose documents are `texts` (plain ASCII without quotes or backslashes).
DataConfig JsonlConfig(const std::vector<std::string>& texts, int64_t seq_len,
                       int64_t micro_batch_size, Padding padding) {
  DataConfig config;
  config.path = TempPath(".jsonl");
  config.format = DataFormat::kJsonl;
  config.seq_len = seq_len;
  config.micro_batch_size = micro_batch_size;
  config.padding = padding;
  std::ofstream out(config.path, std::ios::trunc);
  for (const std::string& text : texts) out << "{\"text\": \"" << text << "\"}\n";
  return config;
}

DataConfig DevilsDictionaryConfig(int64_t seq_len, int64_t micro_batch_size) {
  DataConfig config;
  config.path = std::string(MEMSWEEP_SOURCE_DIR) + "/experiments/data/devils-dictionary.jsonl";
  config.format = DataFormat::kJsonl;
  config.seq_len = seq_len;
  config.micro_batch_size = micro_batch_size;
  config.padding = Padding::kLongest;
  return config;
}

std::vector<int64_t> Row(const at::Tensor& matrix, int64_t row) {
  const at::Tensor values = matrix[row].contiguous();
  const int64_t* data = values.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + values.numel());
}

// The row of `batch` whose first byte (input position 1) is `first_byte`.
int64_t FindRow(const Batch& batch, char first_byte) {
  for (int64_t r = 0; r < batch.Rows(); ++r) {
    if (batch.input_ids[r][1].item<int64_t>() == first_byte) return r;
  }
  ADD_FAILURE() << "no row starts with " << first_byte;
  return 0;
}

int64_t CountNotIgnored(const at::Tensor& targets) {
  return targets.ne(kIgnoreIndex).sum().item<int64_t>();
}

TEST(BatcherTest, PadsToLongestRowAndIgnoresPadTargets) {
  Batcher batcher(
      JsonlConfig({"a", "bcde"}, /*seq_len=*/16, /*micro_batch_size=*/2, Padding::kLongest),
      /*seed=*/1);
  const Batch batch = batcher.Next();
  ASSERT_EQ(batch.Rows(), 2);
  ASSERT_EQ(batch.Length(), 5);  // "bcde" is 6 tokens: 5 inputs
  EXPECT_EQ(batch.input_ids.scalar_type(), at::kLong);
  EXPECT_EQ(batch.targets.scalar_type(), at::kLong);
  EXPECT_EQ(batch.position_ids.scalar_type(), at::kLong);

  const int64_t shorter = FindRow(batch, 'a');
  EXPECT_EQ(Row(batch.input_ids, shorter),
            (std::vector<int64_t>{kBosId, 'a', kPadId, kPadId, kPadId}));
  EXPECT_EQ(Row(batch.targets, shorter),
            (std::vector<int64_t>{'a', kEosId, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex}));
  const int64_t longer = FindRow(batch, 'b');
  EXPECT_EQ(Row(batch.input_ids, longer), (std::vector<int64_t>{kBosId, 'b', 'c', 'd', 'e'}));
  EXPECT_EQ(Row(batch.targets, longer), (std::vector<int64_t>{'b', 'c', 'd', 'e', kEosId}));
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(Row(batch.position_ids, r), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  }
  EXPECT_EQ(batch.real_tokens, 7);
  EXPECT_EQ(batch.positions, 10);
}

TEST(BatcherTest, MaxLengthPadsEveryRowToSeqLen) {
  Batcher batcher(
      JsonlConfig({"a", "bcde"}, /*seq_len=*/16, /*micro_batch_size=*/2, Padding::kMaxLength),
      /*seed=*/1);
  const Batch batch = batcher.Next();
  ASSERT_EQ(batch.Rows(), 2);
  ASSERT_EQ(batch.Length(), 16);
  EXPECT_EQ(batch.real_tokens, 7);
  EXPECT_EQ(batch.positions, 32);
  EXPECT_EQ(CountNotIgnored(batch.targets), 7);
  EXPECT_EQ(batch.input_ids.eq(kPadId).sum().item<int64_t>(), 32 - 7);
  EXPECT_TRUE(at::equal(batch.position_ids[1], at::arange(16, at::kLong)));
  const int64_t longer = FindRow(batch, 'b');
  EXPECT_EQ(batch.targets[longer][4].item<int64_t>(), kEosId);
  EXPECT_EQ(batch.targets[longer][5].item<int64_t>(), kIgnoreIndex);
}

TEST(BatcherTest, TruncatesSequencesToSeqLenPlusOneTokens) {
  Batcher batcher(JsonlConfig({std::string(100, 'x')}, /*seq_len=*/8, /*micro_batch_size=*/1,
                              Padding::kLongest),
                  /*seed=*/1);
  EXPECT_EQ(batcher.MeanSequenceTokens(), 9.0);
  const Batch batch = batcher.Next();
  ASSERT_EQ(batch.Length(), 8);
  EXPECT_EQ(Row(batch.input_ids, 0),
            (std::vector<int64_t>{kBosId, 'x', 'x', 'x', 'x', 'x', 'x', 'x'}));
  EXPECT_EQ(Row(batch.targets, 0), std::vector<int64_t>(8, 'x'));  // EOS cut off
  EXPECT_EQ(batch.real_tokens, 8);
}

TEST(BatcherTest, TargetsAreInputsShiftedByOneAndRealTokensIsExact) {
  Batcher batcher(DevilsDictionaryConfig(/*seq_len=*/128, /*micro_batch_size=*/4), /*seed=*/3);
  for (int step = 0; step < 20; ++step) {
    const Batch batch = batcher.Next();
    ASSERT_EQ(batch.Rows(), 4);
    ASSERT_LE(batch.Length(), 128);
    EXPECT_EQ(batch.real_tokens, CountNotIgnored(batch.targets));
    EXPECT_EQ(batch.positions, 4 * batch.Length());
    const int64_t length = batch.Length();
    const at::Tensor real = batch.targets.ne(kIgnoreIndex);
    // Wherever two consecutive positions are real, the target of one is the next input.
    const at::Tensor both_real = real.slice(1, 0, length - 1).logical_and(real.slice(1, 1, length));
    const at::Tensor shifted_matches = batch.targets.slice(1, 0, length - 1)
                                           .eq(batch.input_ids.slice(1, 1, length))
                                           .logical_or(both_real.logical_not());
    EXPECT_TRUE(shifted_matches.all().item<bool>()) << "step " << step;
    EXPECT_TRUE(batch.input_ids.select(1, 0).eq(kBosId).all().item<bool>());
    EXPECT_TRUE(batch.input_ids.masked_select(real.logical_not()).eq(kPadId).all().item<bool>());
    // Padding only at the end of a row: real positions form a prefix.
    const at::Tensor real_long = real.to(at::kLong);
    EXPECT_TRUE(at::equal(std::get<0>(real_long.cummin(1)), real_long));
  }
}

TEST(BatcherTest, SameSeedGivesSameBatches) {
  Batcher first(DevilsDictionaryConfig(/*seq_len=*/64, /*micro_batch_size=*/4), /*seed=*/7);
  Batcher second(DevilsDictionaryConfig(/*seq_len=*/64, /*micro_batch_size=*/4), /*seed=*/7);
  for (int step = 0; step < 300; ++step) {  // beyond the first epoch of 250 batches
    const Batch a = first.Next();
    const Batch b = second.Next();
    ASSERT_TRUE(at::equal(a.input_ids, b.input_ids)) << "step " << step;
    ASSERT_TRUE(at::equal(a.targets, b.targets)) << "step " << step;
    ASSERT_EQ(a.real_tokens, b.real_tokens);
  }
  EXPECT_EQ(first.Epoch(), 1);
}

TEST(BatcherTest, DifferentSeedGivesDifferentOrder) {
  const DataConfig config = DevilsDictionaryConfig(/*seq_len=*/64, /*micro_batch_size=*/997);
  const Batch a = Batcher(config, /*seed=*/7).Next();
  const Batch b = Batcher(config, /*seed=*/8).Next();
  ASSERT_EQ(a.Length(), b.Length());
  EXPECT_FALSE(at::equal(a.input_ids, b.input_ids));
  // Same sequences, only in another order.
  EXPECT_TRUE(
      at::equal(std::get<0>(a.input_ids.sum(1).sort()), std::get<0>(b.input_ids.sum(1).sort())));
}

TEST(BatcherTest, EpochWrapsAroundAndVisitsEverySequenceOncePerEpoch) {
  Batcher batcher(JsonlConfig({"a", "b", "c", "d", "e"}, /*seq_len=*/8, /*micro_batch_size=*/2,
                              Padding::kLongest),
                  /*seed=*/5);
  EXPECT_EQ(batcher.NumSequences(), 5);
  std::vector<char> visited;
  std::vector<int64_t> epoch_after_batch;
  for (int step = 0; step < 5; ++step) {  // 10 rows: exactly two epochs
    const Batch batch = batcher.Next();
    ASSERT_EQ(batch.Rows(), 2);  // also the batch that crosses the epoch boundary
    for (int64_t r = 0; r < 2; ++r) {
      visited.push_back(static_cast<char>(batch.input_ids[r][1].item<int64_t>()));
    }
    epoch_after_batch.push_back(batcher.Epoch());
  }
  EXPECT_EQ(epoch_after_batch, (std::vector<int64_t>{0, 0, 1, 1, 2}));
  const std::set<char> all = {'a', 'b', 'c', 'd', 'e'};
  EXPECT_EQ(std::set<char>(visited.begin(), visited.begin() + 5), all);
  EXPECT_EQ(std::set<char>(visited.begin() + 5, visited.end()), all);
}

TEST(BatcherTest, ReshufflesAtEveryEpoch) {
  Batcher batcher(DevilsDictionaryConfig(/*seq_len=*/64, /*micro_batch_size=*/997), /*seed=*/7);
  const Batch first_epoch = batcher.Next();
  EXPECT_EQ(batcher.Epoch(), 1);
  const Batch second_epoch = batcher.Next();
  EXPECT_EQ(batcher.Epoch(), 2);
  EXPECT_FALSE(at::equal(first_epoch.input_ids, second_epoch.input_ids));
}

TEST(BatcherTest, TokenFileIsCutIntoWindowsOfSeqLenPlusOne) {
  DataConfig config;
  config.path = TempPath(".bin");
  config.format = DataFormat::kTokens;
  config.token_dtype = TokenDtype::kUint16;
  config.seq_len = 4;
  config.micro_batch_size = 3;
  config.padding = Padding::kLongest;
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 17; ++i) tokens.push_back(1000 * i);  // windows 0-4, 5-9, 10-14
  WriteTokenFile(config.path, tokens, config.token_dtype);

  Batcher batcher(config, /*seed=*/11);
  EXPECT_EQ(batcher.NumSequences(), 3);
  EXPECT_EQ(batcher.MaxTokenId(), 14000);  // tail 15000, 16000 dropped; no padding possible
  EXPECT_EQ(batcher.MeanSequenceTokens(), 5.0);
  const Batch batch = batcher.Next();
  ASSERT_EQ(batch.Rows(), 3);
  ASSERT_EQ(batch.Length(), 4);
  EXPECT_EQ(batch.real_tokens, 12);
  std::vector<std::vector<int64_t>> inputs, targets;
  for (int64_t r = 0; r < 3; ++r) {
    inputs.push_back(Row(batch.input_ids, r));
    targets.push_back(Row(batch.targets, r));
  }
  std::sort(inputs.begin(), inputs.end());
  std::sort(targets.begin(), targets.end());
  EXPECT_EQ(inputs,
            (std::vector<std::vector<int64_t>>{
                {0, 1000, 2000, 3000}, {5000, 6000, 7000, 8000}, {10000, 11000, 12000, 13000}}));
  EXPECT_EQ(targets,
            (std::vector<std::vector<int64_t>>{
                {1000, 2000, 3000, 4000}, {6000, 7000, 8000, 9000}, {11000, 12000, 13000, 14000}}));
}

TEST(BatcherTest, TokenFileShorterThanOneWindowIsDataError) {
  DataConfig config;
  config.path = TempPath(".bin");
  config.format = DataFormat::kTokens;
  config.token_dtype = TokenDtype::kUint32;
  config.seq_len = 8;
  WriteTokenFile(config.path, {1, 2, 3, 4, 5, 6, 7, 8}, config.token_dtype);  // needs 9
  EXPECT_THROW(Batcher(config, /*seed=*/1), DataError);
}

TEST(BatcherTest, ReportsDevilsDictionaryStatistics) {
  const DataConfig config = DevilsDictionaryConfig(/*seq_len=*/8192, /*micro_batch_size=*/4);
  const std::vector<std::string> documents = LoadTextDocuments(config);
  double total_tokens = 0;
  for (const std::string& document : documents) total_tokens += document.size() + 2;

  Batcher batcher(config, /*seed=*/1);
  EXPECT_EQ(batcher.NumSequences(), 997);
  EXPECT_DOUBLE_EQ(batcher.MeanSequenceTokens(), total_tokens / 997);
  EXPECT_EQ(batcher.MaxTokenId(), kPadId);  // rows get padded, so the model must embed kPadId
  EXPECT_LT(batcher.MaxTokenId(), kByteVocabSize);
  EXPECT_EQ(batcher.Epoch(), 0);
}

TEST(BatcherTest, RejectsNonPositiveSeqLenAndMicroBatchSize) {
  DataConfig config = DevilsDictionaryConfig(/*seq_len=*/0, /*micro_batch_size=*/4);
  EXPECT_THROW(Batcher(config, /*seed=*/1), DataError);
  config.seq_len = 16;
  config.micro_batch_size = 0;
  EXPECT_THROW(Batcher(config, /*seed=*/1), DataError);
  // The message names the table that sets the key.
  try {
    Batcher batcher(config, /*seed=*/1);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "[strategies.batching] micro_batch_size = 0: must be at least 1");
  }
}

}  // namespace
}  // namespace memsweep::data
