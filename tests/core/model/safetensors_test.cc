// Safetensors reading and Hugging Face weight loading: files written here byte for byte per the
// format's specification; round trips in every dtype memsweep loads, sharded checkpoints through
// their index, refusals that name the tensor, the file and the expected shape, and a run that
// loads its own initial weights training exactly as the seeded run.
#include "core/model/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/model/hf_weights.h"
#include "core/model/llama.h"
#include "support/run_configs.h"
#include "support/hf_named_weights.h"
#include "support/safetensors_writer.h"

namespace memsweep::model {
namespace {

using testing_support::HuggingFaceNamed;
using testing_support::NamedTensors;
using testing_support::WriteSafetensors;

std::string TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("memsweep-st-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

template <typename Body>
std::string ErrorOf(Body body) {
  try {
    body();
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SafetensorsTest, RoundTripsEveryDtypeAsAViewOfTheFile) {
  const std::string file = TempDir("roundtrip") + "/t.safetensors";
  const at::Tensor f32 = at::randn({3, 5});
  const at::Tensor bf16 = at::randn({7}).to(at::kBFloat16);
  const at::Tensor f16 = at::randn({2, 2, 2}).to(at::kHalf);
  WriteSafetensors(file, {{"a", f32}, {"b.weight", bf16}, {"c", f16}});
  const SafetensorsSet set = OpenSafetensors(file);
  ASSERT_EQ(set.Entries().size(), 3u);
  EXPECT_TRUE(at::equal(set.Read(*set.Find("a")), f32));
  EXPECT_TRUE(at::equal(set.Read(*set.Find("b.weight")), bf16));
  EXPECT_TRUE(at::equal(set.Read(*set.Find("c")), f16));
  EXPECT_EQ(set.Find("c")->shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(set.Find("nope"), nullptr);
}

TEST(SafetensorsTest, ReadsAShardedCheckpointThroughItsIndex) {
  const std::string dir = TempDir("sharded");
  WriteSafetensors(dir + "/model-00001-of-00002.safetensors", {{"x", at::ones({4})}});
  WriteSafetensors(dir + "/model-00002-of-00002.safetensors", {{"y", at::zeros({2, 3})}});
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"metadata": {"total_size": 40}, "weight_map": {"x": "model-00001-of-00002.safetensors",
             "y": "model-00002-of-00002.safetensors"}})";
  const SafetensorsSet set = OpenSafetensors(dir);
  EXPECT_EQ(set.Files().size(), 2u);
  EXPECT_TRUE(at::equal(set.Read(*set.Find("x")), at::ones({4})));
  EXPECT_EQ(set.Find("y")->file, dir + "/model-00002-of-00002.safetensors");
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"weight_map": {"z": "model-00001-of-00002.safetensors"}})";
  EXPECT_NE(ErrorOf([&] { OpenSafetensors(dir); }).find("names \"z\" in"), std::string::npos);
}

TEST(SafetensorsTest, RefusesDamagedFilesNamingTheProblem) {
  const std::string dir = TempDir("damaged");
  const std::string file = dir + "/t.safetensors";
  WriteSafetensors(file, {{"a", at::randn({64})}});
  const auto size = std::filesystem::file_size(file);
  std::filesystem::resize_file(file, size - 4);
  EXPECT_NE(ErrorOf([&] { OpenSafetensors(file); }).find("the file is truncated"),
            std::string::npos);
  std::ofstream(dir + "/short.safetensors") << "abc";
  EXPECT_NE(ErrorOf([&] { OpenSafetensors(dir + "/short.safetensors"); }).find("too short"),
            std::string::npos);
  WriteSafetensors(file, {{"a", at::randn({2}).to(at::kDouble)}});
  EXPECT_TRUE(OpenSafetensors(file).Find("a") != nullptr);  // F64 reads (tests use it)
  EXPECT_NE(ErrorOf([&] { OpenSafetensors(dir + "/none"); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { OpenSafetensors(dir); }).find("no model.safetensors"),
            std::string::npos);
}

LlamaConfig SmallQwen() {
  LlamaConfig c;
  c.model_type = "qwen2";
  c.vocab_size = 300;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.qkv_bias = true;
  return c;
}

TEST(HfWeightsTest, LoadsEveryTensorIntoItsParameterConvertingTheDtype) {
  for (const char* type : {"qwen2", "phi3"}) {
    LlamaConfig c = SmallQwen();
    c.model_type = type;
    c.qkv_bias = std::string(type) == "qwen2";
    torch::manual_seed(1);
    LlamaModel source(c);
    for (auto& p : source->parameters()) p.data().normal_();  // biases and norms too
    const std::string file = TempDir(std::string("load-") + type) + "/model.safetensors";
    NamedTensors named = HuggingFaceNamed(*source);
    for (auto& [name, tensor] : named) tensor = tensor.to(at::kBFloat16);  // stored as BF16
    WriteSafetensors(file, named);
    const SafetensorsSet set = OpenSafetensors(file);
    CheckWeights(set, c);
    torch::manual_seed(2);
    LlamaModel target(c);
    LoadWeights(*target, set);
    const auto want = source->named_parameters();
    for (const auto& item : target->named_parameters()) {
      EXPECT_TRUE(at::equal(item.value(), want[item.key()].to(at::kBFloat16).to(at::kFloat)))
          << type << " " << item.key();
      EXPECT_EQ(item.value().scalar_type(), at::kFloat);
    }
  }
}

TEST(HfWeightsTest, RefusesMissingExtraAndMisshapenTensorsNamingTensorFileAndShape) {
  const LlamaConfig c = SmallQwen();
  torch::manual_seed(1);
  LlamaModel model(c);
  const std::string dir = TempDir("refuse");
  NamedTensors named = HuggingFaceNamed(*model);

  NamedTensors missing;  // everything but the embedding
  for (const auto& item : named) {
    if (item.first != "model.embed_tokens.weight") missing.push_back(item);
  }
  WriteSafetensors(dir + "/missing.safetensors", missing);
  EXPECT_EQ(ErrorOf([&] { CheckWeights(OpenSafetensors(dir + "/missing.safetensors"), c); }),
            dir + "/missing.safetensors: tensor \"model.embed_tokens.weight\" (shape [300, 32]) "
                  "is missing: the weights are not a qwen2 checkpoint of this shape (check "
                  "[model] config and the overrides beside it)");

  NamedTensors extra = named;
  extra.emplace_back("model.layers.9.mlp.up_proj.weight", at::zeros({2, 2}));
  WriteSafetensors(dir + "/extra.safetensors", extra);
  EXPECT_NE(ErrorOf([&] { CheckWeights(OpenSafetensors(dir + "/extra.safetensors"), c); })
                .find("tensor \"model.layers.9.mlp.up_proj.weight\" (shape [2, 2]) is not part of "
                      "the qwen2 model"),
            std::string::npos);

  NamedTensors shaped = named;
  for (auto& [name, tensor] : shaped) {
    if (name == "model.layers.1.self_attn.k_proj.weight") tensor = at::zeros({8, 32});
  }
  WriteSafetensors(dir + "/shape.safetensors", shaped);
  EXPECT_EQ(ErrorOf([&] { CheckWeights(OpenSafetensors(dir + "/shape.safetensors"), c); }),
            dir + "/shape.safetensors: tensor \"model.layers.1.self_attn.k_proj.weight\" has "
                  "shape [8, 32], the model needs [16, 32] (check [model] config and overrides)");
}

// A run that loads the seeded run's initial weights (saved as safetensors) trains exactly as the
// seeded run, with the same memory figures: loaded weights count like initialised ones, and the
// mapped file counts nowhere. Weights from another seed train differently (loading happened).
TEST(HfWeightsTest, ARunFromSavedInitialWeightsMatchesTheSeededRunBitwise) {
  const config::RunConfig seeded = testing_support::TinyRun(3);
  const std::string dir = TempDir("run");
  for (const int64_t seed : std::vector<int64_t>{static_cast<int64_t>(seeded.experiment.seed), 99}) {
    torch::manual_seed(seed);
    LlamaModel init(seeded.model.llama);
    WriteSafetensors(dir + "/seed" + std::to_string(seed) + ".safetensors", HuggingFaceNamed(*init));
  }
  const train::RunResult a = testing_support::Train(seeded);
  const train::RunResult same = testing_support::Train(testing_support::TinyRun(
      3, {"model.weights=\"" + dir + "/seed" + std::to_string(seeded.experiment.seed) +
          ".safetensors\""}));
  const train::RunResult other = testing_support::Train(
      testing_support::TinyRun(3, {"model.weights=\"" + dir + "/seed99.safetensors\""}));
  ASSERT_EQ(a.steps.size(), same.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].loss, same.steps[i].loss) << "step " << i;
    EXPECT_EQ(a.steps[i].peak_allocated_bytes, same.steps[i].peak_allocated_bytes) << "step " << i;
  }
  EXPECT_EQ(a.memory.params_bytes, same.memory.params_bytes);
  EXPECT_EQ(a.memory.peak_allocated_bytes, same.memory.peak_allocated_bytes);
  EXPECT_NE(a.steps[0].loss, other.steps[0].loss);
  EXPECT_EQ(a.memory.params_bytes, other.memory.params_bytes);
}

}  // namespace
}  // namespace memsweep::model
