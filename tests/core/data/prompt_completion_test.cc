// Instruction data: JSONL prompt/completion lines, and train_on = "completion" taking the loss on
// the completion's tokens only — the prompt's tokens stay inputs, never targets, through every
// packing source's batch assembly, and are not counted as tokens.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/data/byte_tokenizer.h"
#include "core/data/document_source.h"
#include "memsweep/batch_assembly.h"
#include "memsweep/batcher.h"
#include "memsweep/token_sequences.h"
#include "support/run_configs.h"

namespace memsweep::data {
namespace {

std::string WriteJsonl(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << contents;
  return path;
}

DataConfig JsonlConfig(const std::string& path, TrainOn train_on) {
  DataConfig config;
  config.path = path;
  config.format = DataFormat::kJsonl;
  config.seq_len = 64;
  config.micro_batch_size = 2;
  config.train_on = train_on;
  return config;
}

TEST(PromptCompletionTest, TheCompletionAloneIsTrainedWithTheFirstTargetItsFirstToken) {
  const std::string path =
      WriteJsonl("pc.jsonl", "{\"prompt\": \"Q: 2+2?\\nA:\", \"completion\": \" 4\"}\n");
  const TokenSequences sequences =
      LoadTokenSequences(JsonlConfig(path, TrainOn::kCompletion), LongDocuments::kTruncate);
  ASSERT_EQ(sequences.Count(), 1);
  const std::vector<int32_t> ids = Encode("Q: 2+2?\nA: 4");
  ASSERT_EQ(sequences.Length(0), static_cast<int64_t>(ids.size()));
  const int64_t prompt_tokens = 1 + 10;  // BOS + the 10 bytes of "Q: 2+2?\nA:"
  for (int64_t i = 0; i < sequences.Length(0); ++i) {
    EXPECT_EQ(TokenId(sequences.Data(0)[i]), ids[i]) << i;
    EXPECT_EQ(IsTarget(sequences.Data(0)[i]), i >= prompt_tokens) << i;
  }
  const Batch batch = AssembleBatch({{{sequences.Data(0), sequences.Length(0)}}},
                                    sequences.Length(0) - 1, /*with_segments=*/false);
  // Inputs are the whole document; targets only the completion " 4" and EOS.
  for (int64_t t = 0; t + 1 < sequences.Length(0); ++t) {
    EXPECT_EQ(batch.input_ids[0][t].item<int64_t>(), ids[t]) << t;
    const int64_t want = t + 1 >= prompt_tokens ? ids[t + 1] : kIgnoreIndex;
    EXPECT_EQ(batch.targets[0][t].item<int64_t>(), want) << t;
  }
  EXPECT_EQ(batch.real_tokens, 3);  // ' ', '4', EOS
  EXPECT_EQ(batch.positions, sequences.Length(0) - 1);

  // train_on = "all": the same line trains every token.
  const TokenSequences all =
      LoadTokenSequences(JsonlConfig(path, TrainOn::kAll), LongDocuments::kTruncate);
  for (int64_t i = 0; i < all.Length(0); ++i) EXPECT_TRUE(IsTarget(all.Data(0)[i]));
}

TEST(PromptCompletionTest, RefusesLinesWithoutAPairNamingTheLine) {
  const std::string path = WriteJsonl(
      "mixed.jsonl", "{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"text\": \"plain\"}\n");
  try {
    LoadTokenSequences(JsonlConfig(path, TrainOn::kCompletion), LongDocuments::kTruncate);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":2: no string fields \"prompt\" and \"completion\": with [data] train_on = "
                     "\"completion\" each line must be one JSON object with string fields "
                     "\"prompt\" and \"completion\" (or set train_on = \"all\" to train on every "
                     "token)");
  }
  // Without train_on = "completion" a file may mix pairs and text lines.
  EXPECT_EQ(LoadTextDocuments(JsonlConfig(path, TrainOn::kAll)),
            (std::vector<std::string>{"ab", "plain"}));
}

TEST(PromptCompletionTest, ATrainingRunTakesTheLossOnCompletionsOnly) {
  std::string lines;
  for (int i = 0; i < 16; ++i) {
    lines += "{\"prompt\": \"Define word " + std::to_string(i) +
             ": \", \"completion\": \"a thing that is " + std::to_string(i * 7) + ".\"}\n";
  }
  const std::string path = WriteJsonl("train.jsonl", lines);
  config::RunConfig all = testing_support::TinyRun(2, {"data.path=\"" + path + "\""});
  config::RunConfig completion = testing_support::TinyRun(
      2, {"data.path=\"" + path + "\"", "data.train_on=\"completion\""});
  const train::RunResult a = testing_support::Train(all);
  const train::RunResult c = testing_support::Train(completion);
  ASSERT_EQ(a.steps.size(), 2u);
  ASSERT_EQ(c.steps.size(), 2u);
  // Same rows, same positions; fewer tokens trained, a different loss.
  EXPECT_EQ(a.steps[0].positions, c.steps[0].positions);
  EXPECT_LT(c.steps[0].tokens, a.steps[0].tokens);
  EXPECT_NE(a.steps[0].loss, c.steps[0].loss);
  // Each completion trains its bytes and EOS: " a thing that is N." + EOS.
  int64_t expected = 0;
  for (int i = 0; i < 16; ++i) expected += 16 + std::to_string(i * 7).size() + 2;
  EXPECT_GT(c.steps[0].tokens, 0);
  EXPECT_LE(c.steps[0].tokens, expected);
}

TEST(PromptCompletionTest, CompletionNeedsJsonl) {
  try {
    testing_support::TinyRun(1, {"data.format=\"text\"", "data.train_on=\"completion\""});
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"completion\" needs JSONL prompt/completion lines"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memsweep::data
