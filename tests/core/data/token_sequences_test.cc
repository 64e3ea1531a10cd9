#include "memsweep/token_sequences.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
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

DataConfig JsonlConfig(const std::vector<std::string>& texts, int64_t seq_len) {
  DataConfig config;
  config.path = TempPath(".jsonl");
  config.format = DataFormat::kJsonl;
  config.seq_len = seq_len;
  std::ofstream out(config.path, std::ios::trunc);
  for (const std::string& text : texts) out << "{\"text\": \"" << text << "\"}\n";
  return config;
}

std::vector<int32_t> Sequence(const TokenSequences& sequences, int64_t s) {
  return std::vector<int32_t>(sequences.Data(s), sequences.Data(s) + sequences.Length(s));
}

TEST(TokenSequencesTest, TruncateKeepsSeqLenPlusOneTokens) {
  const TokenSequences sequences =
      LoadTokenSequences(JsonlConfig({"abcdefghij", "xy"}, /*seq_len=*/4), LongDocuments::kTruncate);
  ASSERT_EQ(sequences.Count(), 2);
  EXPECT_EQ(Sequence(sequences, 0), (std::vector<int32_t>{kBosId, 'a', 'b', 'c', 'd'}));
  EXPECT_EQ(Sequence(sequences, 1), (std::vector<int32_t>{kBosId, 'x', 'y', kEosId}));
  EXPECT_EQ(sequences.Positions(0), 4);
  EXPECT_EQ(sequences.TotalPositions(), 4 + 3);
}

// Pieces overlap by one token: every (input, target) pair of the document is in exactly one piece.
TEST(TokenSequencesTest, SplitTrainsEveryPositionOfALongDocumentExactlyOnce) {
  for (int64_t seq_len : {1, 2, 3, 4, 5, 11, 12, 13}) {
    const std::string text = "abcdefghij";  // 12 tokens: 11 positions
    const TokenSequences sequences =
        LoadTokenSequences(JsonlConfig({text}, seq_len), LongDocuments::kSplit);
    const std::vector<int32_t> ids = Encode(text);
    std::vector<std::pair<int32_t, int32_t>> pairs;
    for (int64_t s = 0; s < sequences.Count(); ++s) {
      ASSERT_GE(sequences.Length(s), 2) << "seq_len " << seq_len;
      ASSERT_LE(sequences.Positions(s), seq_len) << "seq_len " << seq_len;
      for (int64_t i = 0; i + 1 < sequences.Length(s); ++i) {
        pairs.emplace_back(sequences.Data(s)[i], sequences.Data(s)[i + 1]);
      }
    }
    std::vector<std::pair<int32_t, int32_t>> expected;
    for (size_t i = 0; i + 1 < ids.size(); ++i) expected.emplace_back(ids[i], ids[i + 1]);
    EXPECT_EQ(pairs, expected) << "seq_len " << seq_len;
    EXPECT_EQ(sequences.TotalPositions(), static_cast<int64_t>(ids.size()) - 1);
  }
}

TEST(TokenSequencesTest, KeepLeavesDocumentsWhole) {
  const TokenSequences sequences =
      LoadTokenSequences(JsonlConfig({"abcdefghij"}, /*seq_len=*/2), LongDocuments::kKeep);
  ASSERT_EQ(sequences.Count(), 1);
  EXPECT_EQ(Sequence(sequences, 0), Encode("abcdefghij"));
}

TEST(TokenSequencesTest, TokenFileIsWindowsOrOneStream) {
  DataConfig config;
  config.path = TempPath(".bin");
  config.format = DataFormat::kTokens;
  config.token_dtype = TokenDtype::kUint16;
  config.seq_len = 3;
  WriteTokenFile(config.path, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, config.token_dtype);
  const TokenSequences windows = LoadTokenSequences(config, LongDocuments::kTruncate);
  ASSERT_EQ(windows.Count(), 2);  // 1-4, 5-8; the tail 9, 10 is dropped
  EXPECT_EQ(Sequence(windows, 1), (std::vector<int32_t>{5, 6, 7, 8}));
  const TokenSequences stream = LoadTokenSequences(config, LongDocuments::kKeep);
  ASSERT_EQ(stream.Count(), 1);
  EXPECT_EQ(stream.Length(0), 10);
}

TEST(TokenSequencesTest, RejectsNonPositiveSeqLen) {
  EXPECT_THROW(LoadTokenSequences(JsonlConfig({"a"}, /*seq_len=*/0), LongDocuments::kTruncate),
               DataError);
}

// seq_len is a batching-strategy parameter: the messages name the table that sets it.
TEST(TokenSequencesTest, SeqLenErrorsNameTheTableThatSetsIt) {
  const auto message = [](const DataConfig& config) -> std::string {
    try {
      LoadTokenSequences(config, LongDocuments::kTruncate);
    } catch (const DataError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(JsonlConfig({"a"}, 0)).find("[strategies.batching] seq_len = 0: must be at "
                                                "least 1"),
            std::string::npos);
  DataConfig config;
  config.path = TempPath(".bin");
  config.format = DataFormat::kTokens;
  config.seq_len = 8;
  WriteTokenFile(config.path, {1, 2, 3}, config.token_dtype);
  EXPECT_NE(message(config).find("use a larger token file or a smaller [strategies.batching] "
                                 "seq_len"),
            std::string::npos)
      << message(config);
}

}  // namespace
}  // namespace memsweep::data
