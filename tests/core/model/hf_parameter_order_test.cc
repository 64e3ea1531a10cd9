// Hugging Face's parameter order (core/model/hf_parameter_order.h): what an optimizer built from
// transformers' model.parameters() walks — for a two-layer model with every bias and an untied
// head, and with a tied head (no lm_head parameter).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/hf_parameter_order.h"
#include "core/model/llama.h"
#include "core/model/llama_config.h"

namespace memsweep::model {
namespace {

std::vector<std::string> NamesInHuggingFaceOrder(const LlamaModel& model) {
  const auto named = model->named_parameters(/*recurse=*/true);
  std::vector<std::string> names;
  for (size_t i : HuggingFaceParameterOrder(*model)) names.push_back(named[i].key());
  return names;
}

std::vector<std::string> Layer(int i) {
  const std::string l = "layer" + std::to_string(i) + ".";
  return {l + "q_proj",    l + "q_proj_bias",    l + "k_proj",
          l + "k_proj_bias", l + "v_proj",       l + "v_proj_bias",
          l + "o_proj",    l + "o_proj_bias",    l + "gate_proj",
          l + "gate_proj_bias", l + "up_proj",   l + "up_proj_bias",
          l + "down_proj", l + "down_proj_bias", l + "input_layernorm.weight",
          l + "post_attention_layernorm.weight"};
}

TEST(HfParameterOrderTest, EmbeddingLayersModuleByModuleFinalNormThenTheHead) {
  LlamaConfig config = *LlamaPreset("tiny");
  config.qkv_bias = config.o_bias = config.mlp_bias = true;
  config.tie_word_embeddings = false;
  const LlamaModel untied(config);
  std::vector<std::string> expected = {"embed_tokens"};
  for (int i = 0; i < config.num_hidden_layers; ++i) {
    for (const std::string& name : Layer(i)) expected.push_back(name);
  }
  expected.push_back("norm.weight");
  expected.push_back("lm_head");
  EXPECT_EQ(NamesInHuggingFaceOrder(untied), expected);
  // LibTorch's own order differs: a module's own parameters before its children's.
  const auto named = untied->named_parameters(true);
  EXPECT_EQ(named[1].key(), "lm_head");

  config.tie_word_embeddings = true;
  const LlamaModel tied(config);
  expected.pop_back();
  EXPECT_EQ(NamesInHuggingFaceOrder(tied), expected);
}

}  // namespace
}  // namespace memsweep::model
