// memsweep's byte-level BPE against Hugging Face `tokenizers`: tokenizer.json files trained by
// tokenizers on the bundled corpus (tests/core/data/tokenizer_reference/make_references.py: a
// Llama-3-style Split + ByteLevel with ignore_merges, and GPT-2's ByteLevel regex), Qwen's
// published tokenizer.json (NFC, Qwen2's regex, 151,643 tokens), and the ids
// tokenizers gives for every corpus document and a Unicode torture text. memsweep must give the
// identical ids. Run by ctest as TokenizerReference (tests/support/reference_test.sh makes the
// references); without MEMSWEEP_TOKENIZER_REFERENCE_DIR the comparison skips, saying so.
#include "core/data/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "memsweep/token_sequences.h"
#include "support/run_configs.h"
#include "support/tokenizer_reference.h"

namespace memsweep::data {
namespace {

TEST(BpeTokenizerTest, IdsEqualHuggingFaceTokenizersOnTheCorpusAndTortureText) {
  const char* dir = std::getenv("MEMSWEEP_TOKENIZER_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "needs MEMSWEEP_TOKENIZER_REFERENCE_DIR: ctest runs it through "
                    "TokenizerReference (tests/support/reference_test.sh)";
  }
  for (const std::string name : {"llama3_style", "gpt2_style", "qwen_published"}) {
    const BpeTokenizer tokenizer = BpeTokenizer::Load(std::string(dir) + "/" + name + ".json");
    testing_support::ExpectReferenceIds(tokenizer, std::string(dir) + "/" + name + ".ids.json",
                                        name, "tokenizers");
  }
}

// [data] tokenizer: a model directory's tokenizer.json with its tokenizer_config.json (BOS and
// EOS around every document), through the data pipeline and a training run.
TEST(BpeTokenizerTest, ADataTokenizerEncodesDocumentsWithBosAndEosAndTrains) {
  const char* dir = std::getenv("MEMSWEEP_TOKENIZER_REFERENCE_DIR");
  if (dir == nullptr) GTEST_SKIP() << "needs MEMSWEEP_TOKENIZER_REFERENCE_DIR (see above)";
  const std::string model_dir = ::testing::TempDir() + "bpe-model";
  std::filesystem::create_directories(model_dir);
  std::filesystem::copy_file(std::string(dir) + "/llama3_style.json", model_dir + "/tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(model_dir + "/tokenizer_config.json")
      << R"({"bos_token": "<|begin_of_text|>", "eos_token": {"content": "<|end_of_text|>"}})";
  std::ifstream in(std::string(dir) + "/llama3_style.ids.json");
  const nlohmann::json reference = nlohmann::json::parse(in);

  DataConfig config;
  config.path = testing_support::SourcePath("experiments/data/devils-dictionary.jsonl");
  config.seq_len = 100000;
  config.tokenizer = model_dir;
  const TokenSequences sequences = LoadTokenSequences(config, LongDocuments::kKeep);
  const BpeTokenizer tokenizer = BpeTokenizer::Load(model_dir + "/tokenizer.json");
  std::vector<int32_t> expected = {tokenizer.TokenId("<|begin_of_text|>")};
  for (const auto& id : reference.at("ids")[0]) expected.push_back(id.get<int32_t>());
  expected.push_back(tokenizer.TokenId("<|end_of_text|>"));
  ASSERT_EQ(sequences.Length(0), static_cast<int64_t>(expected.size()));
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), sequences.Data(0)));

  const train::RunResult run = testing_support::Train(testing_support::TinyRun(
      2, {"data.tokenizer=\"" + model_dir + "\"", "model.vocab_size=2000"}));
  EXPECT_EQ(run.status, train::RunStatus::kOk) << run.error;
  try {
    testing_support::TinyRun(1, {"data.tokenizer=\"" + model_dir + "\"", "model.vocab_size=600"});
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("[model] vocab_size = 600 is smaller than the "
                                         "tokenizer's 2000 ids"),
              std::string::npos)
        << e.what();
  }
}

TEST(BpeTokenizerTest, RefusesWhatItDoesNotImplementNamingTheFile) {
  const std::string path = ::testing::TempDir() + "unigram.json";
  std::ofstream(path) << R"({"model": {"type": "Unigram", "vocab": []}})";
  try {
    BpeTokenizer::Load(path);
    FAIL() << "expected a TokenizerError";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": model type \"Unigram\"", 0), 0u) << e.what();
  }
  EXPECT_THROW(BpeTokenizer::Load(::testing::TempDir() + "missing.json"), TokenizerError);
}

// Found by the tokenizer fuzz target (tools/fuzz): a file whose JSON is a number, or whose fields
// have other types, escaped as an internal error (nlohmann's type_error) instead of refusing it.
TEST(BpeTokenizerTest, JsonOfTheWrongShapeIsRefusedNamingTheFile) {
  const std::string path = ::testing::TempDir() + "shape.json";
  for (const std::string text :
       {std::string("5555"), std::string(R"([1, 2])"),
        std::string(R"({"model": {"type": "BPE", "byte_fallback": "yes"}})"),
        std::string(R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})")}) {
    std::ofstream(path) << text;
    try {
      BpeTokenizer::Load(path);
      ADD_FAILURE() << "accepted " << text;
    } catch (const TokenizerError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace memsweep::data
