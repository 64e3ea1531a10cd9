// adapter/lora against Hugging Face PEFT: the same base weights (loaded from the reference's
// safetensors through [model] weights) and the same factors give the same logits, loss and
// factor gradients, in fp32 within 1e-5 of the reference's largest magnitude. The references
// are made by peft_reference/make_references.py (pinned peft and transformers; ctest runs it
// through tests/support/reference_test.sh as PeftReference.LoraMatchesPeft).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/model/llama.h"
#include "core/model/safetensors.h"
#include "core/train/trainer.h"
#include "memsweep/batch.h"
#include "support/run_configs.h"

namespace memsweep::plugins::adapter {
namespace {

constexpr double kRelative = 1e-5;

double MaxAbs(const at::Tensor& t) { return t.abs().max().item<double>(); }

void ExpectClose(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const double error = MaxAbs(actual.to(at::kDouble) - expected.to(at::kDouble));
  const double scale = MaxAbs(expected.to(at::kDouble));
  EXPECT_LE(error, kRelative * scale) << what << ": max |diff| " << error << ", max |ref| " << scale;
  std::printf("%s: max |diff| / max |ref| = %.3g\n", what.c_str(), error / scale);
}

// At the end of the model stage: the reference's factors into the model, then forward and
// backward on the reference's tokens, compared.
class CompareWithPeft final : public CallbackStrategy {
 public:
  CompareWithPeft(std::string dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {}
  int compared = 0;

  void OnStageEnd(Stage stage, RunContext& ctx) override {
    if (stage != Stage::kModel) return;
    auto* llama = dynamic_cast<model::LlamaModelImpl*>(ctx.model);
    ASSERT_NE(llama, nullptr);
    const model::SafetensorsSet reference = model::OpenSafetensors(dir_ + "/reference.safetensors");
    auto params = llama->named_parameters();
    std::vector<std::pair<std::string, at::Tensor>> factors;
    {
      at::NoGradGuard no_grad;
      for (const auto& [key, entry] : reference.Entries()) {
        if (key.size() < 2 || (key.substr(key.size() - 2) != ".A" && key.substr(key.size() - 2) != ".B")) {
          continue;
        }
        // "<layer>.<module>.A" → "layer<layer>.<module>_lora_A"
        const size_t dot = key.find('.');
        const std::string module = key.substr(dot + 1, key.size() - dot - 3);
        const std::string name =
            "layer" + key.substr(0, dot) + "." + module + "_lora_" + key.substr(key.size() - 1);
        ASSERT_TRUE(params.contains(name)) << name_ << ": memsweep has no factor " << name;
        params[name].copy_(reference.Read(entry));
        factors.emplace_back(key, params[name]);
      }
    }
    const at::Tensor ids = reference.Read(*reference.Find("input_ids")).clone();
    const int64_t b = ids.size(0), t = ids.size(1);
    const at::Tensor positions = at::arange(t, at::kLong).unsqueeze(0).expand({b, t}).contiguous();
    const at::Tensor logits = llama->forward(ids, positions);
    ExpectClose(logits.detach(), reference.Read(*reference.Find("logits")), name_ + " logits");
    at::Tensor targets = at::full({b, t}, data::kIgnoreIndex, at::kLong);
    targets.narrow(1, 0, t - 1).copy_(ids.narrow(1, 1, t - 1));
    const at::Tensor loss = model::NextTokenLoss(logits, targets, static_cast<double>(b * (t - 1)));
    ExpectClose(loss.detach().reshape({1}), reference.Read(*reference.Find("loss")), name_ + " loss");
    loss.backward();
    for (auto& [key, factor] : factors) {
      ASSERT_TRUE(factor.grad().defined()) << name_ << " " << key;
      ExpectClose(factor.grad(), reference.Read(*reference.Find(key + ".grad")),
                  name_ + " grad " + key);
      factor.mutable_grad() = at::Tensor();
      ++compared;
    }
  }

 private:
  std::string dir_, name_;
};

std::string TomlValue(const nlohmann::json& v) {
  if (v.is_string()) return "\"" + v.get<std::string>() + "\"";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_array()) {
    std::string list;
    for (const auto& item : v) list += (list.empty() ? "" : ", ") + TomlValue(item);
    return "[" + list + "]";
  }
  return v.dump();
}

TEST(LoraPeftReferenceTest, LogitsLossAndFactorGradientsMatchPeft) {
  const char* dir = std::getenv("MEMSWEEP_PEFT_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "needs MEMSWEEP_PEFT_REFERENCE_DIR: ctest runs it through "
                    "PeftReference.LoraMatchesPeft (tests/support/reference_test.sh), which makes "
                    "the references with peft";
  }
  std::vector<std::string> cases;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory()) cases.push_back(entry.path().string());
  }
  std::sort(cases.begin(), cases.end());
  ASSERT_EQ(cases.size(), 3u) << "expected llama_all_linear, llama_qv_rslora and phi3_fused";
  for (const std::string& path : cases) {
    const std::string name = std::filesystem::path(path).filename().string();
    std::ifstream lora_file(path + "/lora.json");
    const nlohmann::json lora = nlohmann::json::parse(lora_file);
    std::string adapter = "[strategies.adapter]\nplugin = \"lora\"\n";
    for (const auto& [key, value] : lora.items()) adapter += key + " = " + TomlValue(value) + "\n";
    const std::string text =
        "[experiment]\nname = \"peft\"\nsteps = 1\nseed = 42\n"
        "[model]\nconfig = \"" + path + "\"\nweights = \"" + path + "/model.safetensors\"\n"
        "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
        "[device]\nthreads = 2\n"
        "[strategies.batching]\nseq_len = 32\nmicro_batch_size = 1\n" + adapter;
    const config::RunConfig cfg =
        config::ParseRunConfig(text, testing_support::SourcePath("experiments/test.toml"), {});
    plugin::StrategySet strategies = config::InstantiateStrategies(cfg);
    auto compare = std::make_shared<CompareWithPeft>(path, name);
    strategies.push_back({"callbacks", "compare", "0", compare});
    const train::RunResult result = train::Trainer(cfg, std::move(strategies)).Run();
    ASSERT_EQ(result.status, train::RunStatus::kOk) << name << ": " << result.error;
    EXPECT_GT(compare->compared, 0) << name;
  }
}

}  // namespace
}  // namespace memsweep::plugins::adapter
