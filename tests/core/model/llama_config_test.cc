#include "core/model/llama_config.h"

#include <gtest/gtest.h>

#include "core/model/llama.h"

namespace memsweep::model {
namespace {

int64_t CountModelParameters(const LlamaConfig& cfg) {
  LlamaModel model(cfg);
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

TEST(LlamaConfigTest, ClosedFormParameterCountMatchesTheModel) {
  for (const auto& name : LlamaPresetNames()) {
    const LlamaConfig cfg = *LlamaPreset(name);
    EXPECT_EQ(cfg.ParameterCount(), CountModelParameters(cfg)) << "preset " << name;
  }
  LlamaConfig tied = *LlamaPreset("tiny");
  tied.tie_word_embeddings = true;
  EXPECT_EQ(tied.ParameterCount(), CountModelParameters(tied));
}

TEST(LlamaConfigTest, SmallPresetHasTheDocumentedShape) {
  const LlamaConfig cfg = *LlamaPreset("small");
  EXPECT_EQ(cfg.hidden_size, 512);
  EXPECT_EQ(cfg.num_hidden_layers, 8);
  EXPECT_EQ(cfg.num_attention_heads, 8);
  EXPECT_EQ(cfg.intermediate_size, 1376);
  EXPECT_EQ(cfg.vocab_size, 8192);
  // 8192·512 (embedding) + 8·(4·512² + 3·512·1376 + 2·512) + 512 + 8192·512 (head)
  EXPECT_EQ(cfg.ParameterCount(), 33694208);
}

TEST(LlamaConfigTest, ExplainsImpossibleShapes) {
  LlamaConfig cfg = *LlamaPreset("tiny");
  cfg.num_attention_heads = 5;
  ASSERT_TRUE(cfg.Problem().has_value());
  EXPECT_NE(cfg.Problem()->find("not divisible by num_attention_heads"), std::string::npos);
  cfg = *LlamaPreset("tiny");
  cfg.num_key_value_heads = 3;
  EXPECT_NE(cfg.Problem()->find("multiple of num_key_value_heads"), std::string::npos);
  EXPECT_FALSE(LlamaPreset("tiny")->Problem().has_value());
  EXPECT_FALSE(LlamaPreset("huge").has_value());
}

TEST(LlamaConfigTest, FlopsPerTokenFollowsTheDocumentedFormula) {
  const LlamaConfig cfg = *LlamaPreset("small");
  const double expected = 6.0 * cfg.MatmulParameterCount() + 12.0 * 8 * 8 * 64 * 1024;
  EXPECT_DOUBLE_EQ(cfg.TrainingFlopsPerToken(1024), expected);
}

}  // namespace
}  // namespace memsweep::model
