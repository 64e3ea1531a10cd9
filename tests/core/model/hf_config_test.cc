// Hugging Face config.json → LlamaConfig: the bundled configs of the seeds' models give their
// published parameter counts without building anything; every supported model_type builds a
// model with exactly ParameterCount() parameters; bad configs are refused naming file and fix.
#include "core/model/hf_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/config/config_error.h"
#include "core/config/run_config_loader.h"
#include "core/model/llama.h"
#include "support/run_configs.h"

namespace memsweep::model {
namespace {

using testing_support::SourcePath;

struct Published {
  const char* dir;
  const char* model_type;
  int64_t parameters;
};

// The parameter counts the models' publishers state (model cards / safetensors metadata).
const Published kPublished[] = {
    {"Qwen2.5-7B", "qwen2", 7'615'616'512},       {"Qwen2.5-0.5B", "qwen2", 494'032'768},
    {"Llama-3.2-1B", "llama", 1'235'814'400},     {"Mistral-7B-v0.1", "mistral", 7'241'732'096},
    {"Phi-4-mini-instruct", "phi3", 3'836'021'760}};

TEST(HfConfigTest, BundledConfigsGiveThePublishedParameterCountsWithoutBuildingAModel) {
  for (const Published& model : kPublished) {
    const LlamaConfig c = ReadHuggingFaceConfig(SourcePath("experiments/models/") + model.dir);
    EXPECT_EQ(c.model_type, model.model_type) << model.dir;
    EXPECT_EQ(c.ParameterCount(), model.parameters) << model.dir;
    // The formula by hand: embeddings (+ untied head), per layer q/k/v/o, SwiGLU, two norms,
    // biases where the type has them, the final norm.
    const int64_t h = c.hidden_size, q = c.QDim(), kv = c.KvDim(), i = c.intermediate_size;
    const int64_t layer = 2 * h * q + 2 * h * kv + 3 * h * i + 2 * h +
                          (c.qkv_bias ? q + 2 * kv : 0) + (c.o_bias ? h : 0);
    const int64_t embeddings = c.vocab_size * h * (c.tie_word_embeddings ? 1 : 2);
    EXPECT_EQ(embeddings + c.num_hidden_layers * layer + h, model.parameters) << model.dir;
  }
}

TEST(HfConfigTest, EachTypeReadsWhatMakesItDiffer) {
  const LlamaConfig qwen = ReadHuggingFaceConfig(SourcePath("experiments/models/Qwen2.5-0.5B"));
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.o_bias);
  EXPECT_TRUE(qwen.tie_word_embeddings);
  EXPECT_EQ(qwen.sliding_window, 0);  // use_sliding_window is false
  const LlamaConfig llama = ReadHuggingFaceConfig(SourcePath("experiments/models/Llama-3.2-1B"));
  EXPECT_EQ(llama.rope_scaling.kind, RopeScaling::Kind::kLlama3);
  EXPECT_EQ(llama.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(llama.qkv_bias);
  const LlamaConfig mistral =
      ReadHuggingFaceConfig(SourcePath("experiments/models/Mistral-7B-v0.1/config.json"));
  EXPECT_EQ(mistral.sliding_window, 4096);
  EXPECT_FALSE(mistral.tie_word_embeddings);
  const LlamaConfig phi =
      ReadHuggingFaceConfig(SourcePath("experiments/models/Phi-4-mini-instruct"));
  EXPECT_EQ(phi.RotaryDim(), 96);
  EXPECT_EQ(phi.rope_scaling.kind, RopeScaling::Kind::kLongRope);
  EXPECT_EQ(phi.rope_scaling.short_factor.size(), 48u);
  EXPECT_EQ(phi.rope_scaling.original_max_position_embeddings, 4096);
}

// A shrunk config of each type builds a model whose parameters are exactly ParameterCount().
TEST(HfConfigTest, ShrunkModelsOfEveryTypeHoldExactlyTheCountedParameters) {
  for (const Published& model : kPublished) {
    LlamaConfig c = ReadHuggingFaceConfig(SourcePath("experiments/models/") + model.dir);
    c.vocab_size = 300;
    c.hidden_size = c.num_attention_heads * 8;
    c.head_dim = 8;
    c.intermediate_size = 48;
    c.num_hidden_layers = 2;
    c.rope_scaling.short_factor.resize(c.RotaryDim() / 2, 1.0);
    c.rope_scaling.long_factor.resize(c.RotaryDim() / 2, 1.0);
    ASSERT_FALSE(c.Problem().has_value()) << model.dir << ": " << *c.Problem();
    LlamaModel built(c);
    int64_t total = 0;
    for (const at::Tensor& p : built->parameters()) total += p.numel();
    EXPECT_EQ(total, c.ParameterCount()) << model.dir;
  }
}

std::string WriteConfig(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "memsweep-hf-config";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / name;
  std::ofstream(file) << text;
  return file.string();
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadHuggingFaceConfig(path);
  } catch (const ModelConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HfConfigTest, RefusesWhatItCannotTrainNamingTheFileAndTheFix) {
  const std::string shape =
      R"("vocab_size": 300, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4)";
  const std::string gpt2 = WriteConfig("gpt2.json", R"({"model_type": "gpt2", )" + shape + "}");
  EXPECT_EQ(ErrorOf(gpt2), gpt2 + ": model_type \"gpt2\" is not supported; memsweep trains "
                                  "llama, mistral, qwen2, phi3");
  const std::string missing = WriteConfig("missing.json", R"({"model_type": "llama"})");
  EXPECT_EQ(ErrorOf(missing),
            missing + ": \"vocab_size\" is missing; it is needed for the model's shape");
  const std::string rope = WriteConfig(
      "rope.json", R"({"model_type": "llama", "rope_scaling": {"rope_type": "yarn"}, )" + shape + "}");
  EXPECT_NE(ErrorOf(rope).find("rope_scaling type \"yarn\" is not supported"), std::string::npos);
  const std::string gelu = WriteConfig(
      "gelu.json", R"({"model_type": "llama", "hidden_act": "gelu", )" + shape + "}");
  EXPECT_NE(ErrorOf(gelu).find("SwiGLU"), std::string::npos);
  const std::string bad = WriteConfig("bad.json", "{ not json");
  EXPECT_EQ(ErrorOf(bad).rfind(bad + ": not valid JSON", 0), 0u);
  EXPECT_EQ(ErrorOf("/nonexistent/model"),
            "/nonexistent/model: no such file (give a Hugging Face model directory or its "
            "config.json)");
}

std::string ConfigErrorOf(const std::string& toml) {
  try {
    config::ParseRunConfig(toml, SourcePath("experiments/test.toml"));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HfConfigTest, AnExperimentTakesTheConfigAndOverridesItsKeys) {
  const std::string base =
      "[experiment]\nname = \"hf\"\nsteps = 1\n[data]\npath = \"data/devils-dictionary.jsonl\"\n";
  const config::RunConfig cfg = config::ParseRunConfig(
      base + "[model]\nconfig = \"models/Qwen2.5-0.5B\"\nnum_hidden_layers = 2\n",
      SourcePath("experiments/test.toml"));
  EXPECT_EQ(cfg.model.llama.model_type, "qwen2");
  EXPECT_EQ(cfg.model.llama.num_hidden_layers, 2);
  EXPECT_EQ(cfg.model.llama.vocab_size, 151936);
  EXPECT_NE(ConfigErrorOf(base + "[model]\npreset = \"tiny\"\nconfig = \"models/Qwen2.5-0.5B\"\n")
                .find("give either preset or config, not both"),
            std::string::npos);
  EXPECT_NE(ConfigErrorOf(base + "[model]\nconfig = \"models/Nope\"\n")
                .find("models/Nope: no such file"),
            std::string::npos);
  // Mistral's window: longer rows are refused, naming the window and the fix.
  const std::string mistral = base +
                              "[model]\nconfig = \"models/Mistral-7B-v0.1\"\nnum_hidden_layers = "
                              "1\nhidden_size = 64\nintermediate_size = 64\nhead_dim = 8\n"
                              "[strategies.batching]\nseq_len = 8192\n";
  EXPECT_NE(ConfigErrorOf(mistral).find("seq_len = 8192 is longer than the model's sliding_window "
                                        "= 4096"),
            std::string::npos)
      << ConfigErrorOf(mistral);
}

}  // namespace
}  // namespace memsweep::model
