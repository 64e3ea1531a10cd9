// memsweep's byte-level BPE against Hugging Face `tokenizers`: tokenizer.json files trained by
// tokenizers on the bundled corpus (tests/core/data/tokenizer_reference/make_references.py: a
// Llama-3-style Split + ByteLevel with ignore_merges, and GPT-2's ByteLevel regex), and the ids
// tokenizers gives for every corpus document and a Unicode torture text. memsweep must give the
// identical ids. Run by ctest through tokenizer_reference_test.sh (which makes the references);
// without MEMSWEEP_TOKENIZER_REFERENCE_DIR the comparison skips, saying so.
#include "core/data/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace memsweep::data {
namespace {

TEST(BpeTokenizerTest, IdsEqualHuggingFaceTokenizersOnTheCorpusAndTortureText) {
  const char* dir = std::getenv("MEMSWEEP_TOKENIZER_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "needs MEMSWEEP_TOKENIZER_REFERENCE_DIR: ctest runs it through "
                    "tests/core/data/tokenizer_reference/tokenizer_reference_test.sh";
  }
  for (const std::string name : {"llama3_style", "gpt2_style"}) {
    const BpeTokenizer tokenizer = BpeTokenizer::Load(std::string(dir) + "/" + name + ".json");
    std::ifstream in(std::string(dir) + "/" + name + ".ids.json");
    const nlohmann::json reference = nlohmann::json::parse(in);
    const auto& texts = reference.at("texts");
    const auto& ids = reference.at("ids");
    ASSERT_GT(texts.size(), 1000u);
    int64_t total = 0, mismatched = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::vector<int32_t> got = tokenizer.Encode(texts[i].get<std::string>());
      total += static_cast<int64_t>(got.size());
      if (got != ids[i].get<std::vector<int32_t>>()) {
        ++mismatched;
        ADD_FAILURE() << name << ": text " << i << " (" << texts[i].dump().substr(0, 80)
                      << ") gives other ids than tokenizers";
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %zu texts, %lld ids, %lld mismatches, %.3f s\n", name.c_str(), texts.size(),
                static_cast<long long>(total), static_cast<long long>(mismatched), seconds);
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

}  // namespace
}  // namespace memsweep::data
