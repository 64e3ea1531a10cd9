// Which modules a LoRA adapts, from the model's shapes alone, and what it trains.
#include "adapter/common/lora_targets.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "core/model/hf_config.h"
#include "core/model/linear_shapes.h"
#include "core/model/llama_config.h"
#include "support/run_configs.h"

namespace memsweep::plugins::adapter {
namespace {

model::ModelShape TinyShape() { return model::ShapeOf(*model::LlamaPreset("tiny")); }

std::string ErrorOf(const model::ModelShape& shape, const LoraSettings& s) {
  try {
    ResolveLoraModules(shape, s);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(LoraTargetsTest, AllLinearIsEveryDecoderLinearModuleNeverTheLmHead) {
  const model::ModelShape shape = TinyShape();
  const std::vector<LoraModule> modules = ResolveLoraModules(shape, {.rank = 4, .targets = {"all-linear"}});
  const model::LlamaConfig c = *model::LlamaPreset("tiny");
  ASSERT_EQ(modules.size(), static_cast<size_t>(7 * c.num_hidden_layers));
  EXPECT_EQ(modules[0].module, "q_proj");
  EXPECT_EQ(modules[6].module, "down_proj");
  EXPECT_EQ(modules[6].in_features, c.intermediate_size);
  EXPECT_EQ(modules[6].out_features, c.hidden_size);
  for (const LoraModule& m : modules) EXPECT_NE(m.module, "lm_head");
}

TEST(LoraTargetsTest, Phi3FusesQkvAndGateUpIntoOneModuleEach) {
  const model::LlamaConfig phi =
      model::ReadHuggingFaceConfig(testing_support::SourcePath("experiments/models/Phi-4-mini-instruct"));
  const model::ModelShape shape = model::ShapeOf(phi);
  EXPECT_EQ(LinearModuleNames(shape),
            (std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
  const std::vector<LoraModule> modules =
      ResolveLoraModules(shape, {.rank = 8, .targets = {"qkv_proj"}});
  ASSERT_EQ(modules.size(), static_cast<size_t>(phi.num_hidden_layers));
  EXPECT_EQ(modules[0].out_features, phi.QDim() + 2 * phi.KvDim());
  EXPECT_EQ(modules[0].layers.size(), 3u);  // q, k and v: memsweep keeps them apart
  EXPECT_NE(ErrorOf(shape, {.rank = 8, .targets = {"q_proj"}})
                .find("no module \"q_proj\"; its linear modules are \"qkv_proj\", \"o_proj\", "
                      "\"gate_up_proj\", \"down_proj\""),
            std::string::npos);
}

TEST(LoraTargetsTest, BadTargetsAndRanksAreRefusedWithWhatToWriteInstead) {
  const model::ModelShape shape = TinyShape();
  EXPECT_NE(ErrorOf(shape, {.rank = 4, .targets = {"qkv_proj"}}).find("its linear modules are"),
            std::string::npos);
  EXPECT_NE(ErrorOf(shape, {.rank = 4, .targets = {"lm_head"}}).find("modules_to_save"),
            std::string::npos);
  EXPECT_NE(ErrorOf(shape, {.rank = 0, .targets = {"q_proj"}}).find("rank must be at least 1"),
            std::string::npos);
  const int64_t kv = model::LlamaPreset("tiny")->KvDim();
  EXPECT_NE(ErrorOf(shape, {.rank = kv + 1, .targets = {"k_proj"}})
                .find("a rank of at most " + std::to_string(kv)),
            std::string::npos);
  EXPECT_NE(ErrorOf(shape, {.rank = 4, .targets = {"q_proj"}, .modules_to_save = {"norm"}})
                .find("write \"embed_tokens\" or \"lm_head\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(shape, {.rank = 4, .targets = {"all-linear", "q_proj"}}).find("stands alone"),
            std::string::npos);
}

// Seed 001's adapter: Qwen2.5-7B, r = 128 on every linear module: rank · (in + out) summed over
// q (3584 → 3584), k and v (3584 → 512), o (3584 → 3584), gate and up (3584 → 18944) and down
// (18944 → 3584), times 28 layers (the bundled config.json).
TEST(LoraTargetsTest, Qwen25_7bAllLinearRank128TrainsItsClosedFormCount) {
  const model::LlamaConfig q =
      model::ReadHuggingFaceConfig(testing_support::SourcePath("experiments/models/Qwen2.5-7B"));
  const model::ModelShape shape = model::ShapeOf(q);
  const LoraSettings s{.rank = 128, .targets = {"all-linear"}};
  const int64_t per_layer = 128 * ((3584 + 3584) * 2 + (3584 + 512) * 2 + (3584 + 18944) * 3);
  EXPECT_EQ(LoraTrainableParameters(shape, s, ResolveLoraModules(shape, s)), 28 * per_layer);
  EXPECT_EQ(28 * per_layer, 322961408);
}

TEST(LoraTargetsTest, ModulesToSaveCountATiedTableOnce) {
  model::LlamaConfig c = *model::LlamaPreset("tiny");
  const int64_t table = c.vocab_size * c.hidden_size;
  const LoraSettings both{.rank = 2, .targets = {"q_proj"}, .modules_to_save = {"embed_tokens", "lm_head"}};
  const LoraSettings none{.rank = 2, .targets = {"q_proj"}};
  c.tie_word_embeddings = false;
  model::ModelShape untied = model::ShapeOf(c);
  const int64_t base = LoraTrainableParameters(untied, none, ResolveLoraModules(untied, none));
  EXPECT_EQ(LoraTrainableParameters(untied, both, ResolveLoraModules(untied, both)), base + 2 * table);
  c.tie_word_embeddings = true;
  model::ModelShape tied = model::ShapeOf(c);
  EXPECT_EQ(LoraTrainableParameters(tied, both, ResolveLoraModules(tied, both)), base + table);
}

}  // namespace
}  // namespace memsweep::plugins::adapter
