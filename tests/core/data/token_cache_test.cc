// The token cache (core/data/token_cache.h): a corpus tokenized by a real tokenizer is read back
// from the cache with the same ids as encoding it; the cache is what is read the second time;
// a changed data file, tokenizer or setting is another key; a broken file is ignored; and a new
// process checks [model] vocab_size from the cached id count.
#include "core/data/token_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/data/token_file.h"
#include "core/train/run_result.h"
#include "memsweep/token_sequences.h"
#include "support/run_configs.h"
#include "support/scoped_env.h"
#include "support/trained_sentencepiece.h"

namespace memsweep::data {
namespace {

using testing_support::ScopedEnv;

std::vector<int32_t> Ids(const TokenSequences& sequences) { return sequences.tokens; }

class TokenCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "token-cache-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/tokenizer");
    std::filesystem::copy_file(testing_support::TrainedSentencePieceDir() + "/tokenizer.model",
                               dir_ + "/tokenizer/tokenizer.model");
    std::filesystem::copy_file(
        testing_support::SourcePath("experiments/data/devils-dictionary.jsonl"),
        dir_ + "/corpus.jsonl");
    config_.path = dir_ + "/corpus.jsonl";
    config_.tokenizer = dir_ + "/tokenizer";
    config_.seq_len = 64;
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    std::filesystem::remove_all(home_);
  }

  // Encoded without the cache: what every cached load must equal.
  std::vector<int32_t> Encoded(const DataConfig& config,
                               LongDocuments long_documents = LongDocuments::kSplit) {
    const ScopedEnv off("MEMSWEEP_TOKEN_CACHE", "off");
    return Ids(LoadTokenSequences(config, long_documents));
  }

  std::string dir_;
  DataConfig config_;
  std::string home_ = ::testing::TempDir() + "token-cache-home-" + std::to_string(::getpid());
  ScopedEnv cache_home_{"XDG_CACHE_HOME", home_.c_str()};
  ScopedEnv cache_on_{"MEMSWEEP_TOKEN_CACHE", nullptr};
};

TEST_F(TokenCacheTest, ASecondLoadReadsTheCacheWithTheIdsOfEncoding) {
  const std::vector<int32_t> expected = Encoded(config_);
  const std::string key = TokenCacheKey(config_);
  ASSERT_FALSE(key.empty());
  std::filesystem::remove(TokenCacheFile(key));
  EXPECT_EQ(Ids(LoadTokenSequences(config_, LongDocuments::kSplit)), expected);  // writes
  ASSERT_TRUE(std::filesystem::exists(TokenCacheFile(key)));
  EXPECT_EQ(Ids(LoadTokenSequences(config_, LongDocuments::kSplit)), expected);  // reads
  // Another seq_len and long-document rule cut the same cached documents.
  DataConfig longer = config_;
  longer.seq_len = 200;
  EXPECT_EQ(Ids(LoadTokenSequences(longer, LongDocuments::kTruncate)),
            Encoded(longer, LongDocuments::kTruncate));

  // The second load is the file's: a changed id in it shows up.
  std::optional<EncodedDocuments> cached = ReadTokenCache(key);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->ends.size(), 997u);  // the corpus's documents
  cached->ids[1] = 7;
  ASSERT_NE(expected[1], 7);
  ASSERT_TRUE(WriteTokenCache(key, *cached));
  EXPECT_EQ(Ids(LoadTokenSequences(config_, LongDocuments::kSplit))[1], 7);

  // A changed data file is another key: encoded again, right.
  std::ofstream(config_.path, std::ios::app) << R"({"text": "one more document"})" << "\n";
  EXPECT_NE(TokenCacheKey(config_), key);
  const std::vector<int32_t> grown = Encoded(config_);
  EXPECT_GT(grown.size(), expected.size());
  EXPECT_EQ(Ids(LoadTokenSequences(config_, LongDocuments::kSplit)), grown);
}

TEST_F(TokenCacheTest, TheKeyCoversWhatTheIdsDependOn) {
  const std::string key = TokenCacheKey(config_);
  ASSERT_FALSE(key.empty());
  EXPECT_EQ(TokenCacheKey(config_), key);
  DataConfig other = config_;
  other.text_field = "body";
  EXPECT_NE(TokenCacheKey(other), key);
  other = config_;
  other.train_on = TrainOn::kCompletion;
  EXPECT_NE(TokenCacheKey(other), key);
  other = config_;
  other.format = DataFormat::kText;
  EXPECT_NE(TokenCacheKey(other), key);
  other = config_;
  other.seq_len = 999;  // cut after the cache: the same key
  EXPECT_EQ(TokenCacheKey(other), key);

  // BOS/EOS come from a tokenizer_config.json beside the model.
  const std::string tokenizer_key = TokenizerCacheKey(config_);
  std::ofstream(dir_ + "/tokenizer/tokenizer_config.json") << R"({"add_bos_token": false})";
  EXPECT_NE(TokenCacheKey(config_), key);
  EXPECT_NE(TokenizerCacheKey(config_), tokenizer_key);
  // A replaced tokenizer file (another size).
  std::ofstream(dir_ + "/tokenizer/tokenizer.model", std::ios::app) << "x";
  EXPECT_NE(TokenizerCacheKey(config_), tokenizer_key);

  other = config_;
  other.tokenizer = "";  // memsweep's byte tokenizer is not cached
  EXPECT_EQ(TokenCacheKey(other), "");
  other = config_;
  other.format = DataFormat::kTokens;
  EXPECT_EQ(TokenCacheKey(other), "");
  {
    const ScopedEnv off("MEMSWEEP_TOKEN_CACHE", "off");
    EXPECT_EQ(TokenCacheKey(config_), "");
    EXPECT_EQ(TokenizerCacheKey(config_), "");
  }
  {
    const ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
    const ScopedEnv no_home("HOME", nullptr);
    EXPECT_EQ(TokenCacheKey(config_), "");
  }
}

TEST_F(TokenCacheTest, ABrokenOrForeignFileIsIgnored) {
  const std::vector<int32_t> expected = Encoded(config_);
  const std::string key = TokenCacheKey(config_);
  ASSERT_EQ(Ids(LoadTokenSequences(config_, LongDocuments::kSplit)), expected);
  const std::filesystem::path file = TokenCacheFile(key);
  const auto size = std::filesystem::file_size(file);

  std::filesystem::resize_file(file, size - 4);  // one id short
  EXPECT_FALSE(ReadTokenCache(key).has_value());
  EXPECT_EQ(Ids(LoadTokenSequences(config_, LongDocuments::kSplit)), expected);  // and rewritten
  EXPECT_EQ(std::filesystem::file_size(file), size);

  std::ofstream(file, std::ios::trunc) << "not a token cache";
  EXPECT_FALSE(ReadTokenCache(key).has_value());
  EXPECT_EQ(Ids(LoadTokenSequences(config_, LongDocuments::kSplit)), expected);

  // Another key's ids under this key's file name (a hash collision) are not taken.
  DataConfig other = config_;
  other.text_field = "body";
  EncodedDocuments foreign{{5, 6, 7}, {3}};
  ASSERT_TRUE(WriteTokenCache(TokenCacheKey(other), foreign));
  std::ifstream in(TokenCacheFile(TokenCacheKey(other)), std::ios::binary);
  const std::string foreign_bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  std::ofstream(file, std::ios::binary | std::ios::trunc) << foreign_bytes;
  EXPECT_FALSE(ReadTokenCache(key).has_value());
  ASSERT_TRUE(ReadTokenCache(TokenCacheKey(other)).has_value());

  // Ends that run past the ids.
  EncodedDocuments inconsistent{{1, 2, 3}, {2, 5}};
  ASSERT_TRUE(WriteTokenCache(key, inconsistent));
  EXPECT_FALSE(ReadTokenCache(key).has_value());
}

// A training run on cached ids is the run on freshly encoded ids, loss for loss.
TEST_F(TokenCacheTest, ARunOnCachedIdsTrainsAsOnEncodedIds) {
  const auto losses = [&] {
    const train::RunResult run = testing_support::Train(testing_support::TinyRun(
        3, {"data.tokenizer=\"" + config_.tokenizer + "\"", "model.vocab_size=600"}));
    EXPECT_EQ(run.status, train::RunStatus::kOk) << run.error;
    return testing_support::Losses(run);
  };
  std::vector<double> encoded;
  {
    const ScopedEnv off("MEMSWEEP_TOKEN_CACHE", "off");
    encoded = losses();
  }
  const std::vector<double> writing = losses();
  DataConfig bundled = config_;
  bundled.path = testing_support::SourcePath("experiments/data/devils-dictionary.jsonl");
  ASSERT_TRUE(ReadTokenCache(TokenCacheKey(bundled)).has_value());
  const std::vector<double> reading = losses();
  EXPECT_EQ(writing, encoded);
  EXPECT_EQ(reading, encoded);
}

// A run's config check reads the tokenizer's id count from the cache once it is there.
TEST_F(TokenCacheTest, TheVocabularyCheckReadsTheCachedIdCount) {
  const std::string key = TokenizerCacheKey(config_);
  EXPECT_FALSE(ReadVocabCache(key).has_value());
  const auto run = [&](int64_t vocab) {
    return testing_support::TinyRun(1, {"data.tokenizer=\"" + config_.tokenizer + "\"",
                                        "model.vocab_size=" + std::to_string(vocab)});
  };
  EXPECT_NO_THROW(run(600));
  ASSERT_EQ(ReadVocabCache(key), std::optional<int64_t>(600));
  EXPECT_THROW(run(599), config::ConfigError);
  // What is read is the file: a recorded count of 700 makes 600 too small.
  ASSERT_TRUE(WriteVocabCache(key, 700));
  EXPECT_THROW(run(600), config::ConfigError);
  EXPECT_NO_THROW(run(700));
  // A file without its key's text, or with a count that is not one, is ignored.
  std::ofstream(TokenCacheFile(key).replace_extension(".vocab"), std::ios::trunc) << "700\n";
  EXPECT_FALSE(ReadVocabCache(key).has_value());
  EXPECT_NO_THROW(run(600));
}

// A token file's largest id is read once per version of the file: a new process validating a
// cell (a worker, an estimate, a rank) takes it from the cache; a changed file is read again.
TEST_F(TokenCacheTest, TheTokenFileCheckReadsTheCachedIdCount) {
  DataConfig tokens;
  tokens.format = DataFormat::kTokens;
  tokens.token_dtype = TokenDtype::kUint16;
  tokens.path = dir_ + "/ids.bin";
  std::vector<int32_t> ids(4096);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 300);
  WriteTokenFile(tokens.path, ids, tokens.token_dtype);
  const std::string key = TokenFileCacheKey(tokens);
  ASSERT_FALSE(key.empty());
  EXPECT_NE(key, TokenizerCacheKey(config_));
  EXPECT_FALSE(ReadVocabCache(key).has_value());
  const auto run = [&](int64_t vocab) {
    return testing_support::TinyRun(1, {"data.path=\"" + tokens.path + "\"",
                                        "data.format=\"tokens\"", "data.token_dtype=\"uint16\"",
                                        "model.vocab_size=" + std::to_string(vocab)});
  };
  EXPECT_NO_THROW(run(300));
  ASSERT_EQ(ReadVocabCache(key), std::optional<int64_t>(300));  // largest id 299, + 1
  EXPECT_THROW(run(299), config::ConfigError);
  // What the next validation reads is the cache, not the file.
  ASSERT_TRUE(WriteVocabCache(key, 400));
  try {
    run(300);
    FAIL() << "the cached count was not read";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("holds token id 399 but [model] vocab_size = 300"),
              std::string::npos)
        << e.what();
  }
  // A new version of the file (another size) has another key, and is read again.
  ids.push_back(310);
  WriteTokenFile(tokens.path, ids, tokens.token_dtype);
  const std::string changed = TokenFileCacheKey(tokens);
  EXPECT_NE(changed, key);
  EXPECT_THROW(run(310), config::ConfigError);
  EXPECT_NO_THROW(run(311));
  EXPECT_EQ(ReadVocabCache(changed), std::optional<int64_t>(311));
  {
    const ScopedEnv off("MEMSWEEP_TOKEN_CACHE", "off");
    EXPECT_TRUE(TokenFileCacheKey(tokens).empty());
  }
}

}  // namespace
}  // namespace memsweep::data
