// SentencePiece models (tokenizer.model) through libsentencepiece: a model trained here by the
// same library reads back with its pieces, BOS/EOS and byte fallback, and feeds the data
// pipeline and a training run; and, against the `sentencepiece` Python package, the published
// Mistral-7B-v0.1 tokenizer.model and two models trained on the bundled corpus
// (tests/core/data/sentencepiece_reference/make_references.py) give identical ids on every corpus
// document and a Unicode torture text. Run by ctest as SentencePieceReference
// (tests/support/reference_test.sh makes the references); without
// MEMSWEEP_SENTENCEPIECE_REFERENCE_DIR that comparison skips, saying so.
#include "core/data/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/data/document_encoder.h"
#include "memsweep/token_sequences.h"
#include "support/run_configs.h"
#include "support/tokenizer_reference.h"
#include "support/trained_sentencepiece.h"

namespace memsweep::data {
namespace {

const std::string& TrainedModelDir() { return testing_support::TrainedSentencePieceDir(); }

TEST(SentencePieceTokenizerTest, ReadsAModelWithItsPiecesBosEosAndByteFallback) {
  const auto tokenizer = SentencePieceTokenizer::Load(TrainedModelDir() + "/tokenizer.model");
  EXPECT_EQ(tokenizer->VocabSize(), 600);
  EXPECT_EQ(tokenizer->OwnBos(), tokenizer->TokenId("<s>"));
  EXPECT_EQ(tokenizer->OwnEos(), tokenizer->TokenId("</s>"));
  EXPECT_EQ(tokenizer->OwnBos(), 1);
  EXPECT_EQ(tokenizer->OwnEos(), 2);
  EXPECT_EQ(tokenizer->TokenId("no such piece"), -1);
  // A word of the corpus is fewer pieces than letters (merged); an emoji it never saw falls back
  // to its four UTF-8 bytes, each a <0xNN> piece.
  const std::vector<int32_t> word = tokenizer->Encode("dictionary");
  EXPECT_GE(word.size(), 1u);
  EXPECT_LT(word.size(), std::string("dictionary").size());
  const std::vector<int32_t> emoji = tokenizer->Encode("\xF0\x9F\x98\x80");  // U+1F600
  const std::vector<int32_t> bytes = {tokenizer->TokenId("<0xF0>"), tokenizer->TokenId("<0x9F>"),
                                      tokenizer->TokenId("<0x98>"), tokenizer->TokenId("<0x80>")};
  ASSERT_GE(emoji.size(), 4u);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), emoji.end() - 4));
  for (int32_t id : tokenizer->Encode("Any text at all, 12345.")) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 600);
  }
}

// A directory with both files (as Llama-2 and Mistral ship) reads tokenizer.model; with no
// tokenizer_config.json beside it, every document is <s> + ids + </s>, and it trains.
TEST(SentencePieceTokenizerTest, ADataTokenizerDirectoryUsesTheModelWithItsBosAndEos) {
  const std::string dir = TrainedModelDir();
  std::ofstream(dir + "/tokenizer.json") << "{}";  // would fail to load, were it chosen
  EXPECT_EQ(TokenizerFile(dir), dir + "/tokenizer.model");
  DataConfig config;
  config.path = testing_support::SourcePath("experiments/data/devils-dictionary.jsonl");
  config.seq_len = 100000;
  config.tokenizer = dir;
  const TokenSequences sequences = LoadTokenSequences(config, LongDocuments::kKeep);
  const auto tokenizer = SentencePieceTokenizer::Load(dir + "/tokenizer.model");
  std::ifstream in(config.path);
  std::string first;
  std::getline(in, first);
  std::vector<int32_t> expected = {1};
  const std::vector<int32_t> body =
      tokenizer->Encode(nlohmann::json::parse(first).at("text").get<std::string>());
  expected.insert(expected.end(), body.begin(), body.end());
  expected.push_back(2);
  ASSERT_EQ(sequences.Length(0), static_cast<int64_t>(expected.size()));
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), sequences.Data(0)));

  const train::RunResult run = testing_support::Train(
      testing_support::TinyRun(2, {"data.tokenizer=\"" + dir + "\"", "model.vocab_size=600"}));
  EXPECT_EQ(run.status, train::RunStatus::kOk) << run.error;
}

// The data pipeline keeps a loaded tokenizer per file for the process (the cells forked from
// the runner reuse the one planning loaded); a file that changes is read again.
TEST(SentencePieceTokenizerTest, AChangedTokenizerFileIsReadAgain) {
  const std::string dir = TrainedModelDir() + "/changing";
  std::filesystem::create_directories(dir);
  const auto copy = std::filesystem::copy_options::overwrite_existing;
  std::filesystem::copy_file(TrainedModelDir() + "/tokenizer.model", dir + "/tokenizer.model", copy);
  DataConfig config;
  config.tokenizer = dir;
  EXPECT_EQ(DocumentEncoder(config).VocabSize(), 600);
  EXPECT_EQ(DocumentEncoder(config).VocabSize(), 600);
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + TrainedModelDir() + "/corpus.txt --model_prefix=" + dir +
      "/smaller --vocab_size=500 --model_type=bpe --byte_fallback=true --num_threads=1 "
      "--minloglevel=2");
  ASSERT_TRUE(status.ok()) << status.ToString();
  std::filesystem::copy_file(dir + "/smaller.model", dir + "/tokenizer.model", copy);
  EXPECT_EQ(DocumentEncoder(config).VocabSize(), 500);
}

TEST(SentencePieceTokenizerTest, RefusesAMissingOrForeignFileNamingIt) {
  const std::string path = ::testing::TempDir() + "not-a-model.model";
  std::ofstream(path) << "this is not a serialized ModelProto";
  try {
    SentencePieceTokenizer::Load(path);
    FAIL() << "expected a TokenizerError";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": not a SentencePiece model", 0), 0u) << e.what();
  }
  try {
    testing_support::TinyRun(1, {"data.tokenizer=\"" + ::testing::TempDir() + "missing.model\""});
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.model: no such file"), std::string::npos)
        << e.what();
  }
}

TEST(SentencePieceTokenizerTest, IdsEqualSentencePieceOnTheCorpusAndTortureText) {
  const char* dir = std::getenv("MEMSWEEP_SENTENCEPIECE_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "needs MEMSWEEP_SENTENCEPIECE_REFERENCE_DIR: ctest runs it through "
                    "SentencePieceReference (tests/support/reference_test.sh)";
  }
  for (const std::string name : {"mistral_published", "llama2_style", "unigram"}) {
    const auto tokenizer = SentencePieceTokenizer::Load(std::string(dir) + "/" + name + ".model");
    testing_support::ExpectReferenceIds(*tokenizer, std::string(dir) + "/" + name + ".ids.json",
                                        name, "sentencepiece");
  }
}

}  // namespace
}  // namespace memsweep::data
