// memsweep's model against Hugging Face transformers on the same weights and tokens: for each
// supported model_type (tests/core/model/hf_reference/make_references.py builds 2-layer random
// models with the real head layout, biases, rope scaling, partial rotary, sliding window, tied
// and untied embeddings, and saves them with save_pretrained), memsweep reads config.json and
// model.safetensors and must reproduce the logits, the loss and the gradients transformers
// computed.
//
// Tolerance: max |memsweep − transformers| ≤ 1e-4 × max |transformers| per tensor (fp32), the
// bound the product states for "the same model". Both run the same LibTorch; what differs is the
// order of a few sums (memsweep's fused rotary, the attention core's scaling), each ~1e-7
// relative, so a wrong layout, bias, scaling or rotary dimension shows up as an O(1) error.
//
// Run by ctest as HfReference (tests/support/reference_test.sh), which makes the references with
// the pinned transformers (tools/setup-references) and sets MEMSWEEP_HF_REFERENCE_DIR; without it
// the test skips, saying so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "attention/eager/eager_attention.h"
#include "core/model/hf_config.h"
#include "core/model/hf_weights.h"
#include "core/model/llama.h"
#include "core/model/safetensors.h"
#include "memsweep/batch.h"

namespace memsweep::model {
namespace {

constexpr double kRelative = 1e-4;

double MaxAbs(const at::Tensor& t) { return t.abs().max().item<double>(); }

void ExpectClose(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const double error = MaxAbs(actual.to(at::kDouble) - expected.to(at::kDouble));
  const double scale = MaxAbs(expected.to(at::kDouble));
  EXPECT_LE(error, kRelative * scale)
      << what << ": max |diff| " << error << ", max |ref| " << scale;
  std::printf("%s: max |diff| / max |ref| = %.3g\n", what.c_str(), error / scale);
}

TEST(HfReferenceTest, LogitsLossAndGradientsMatchTransformersForEveryModelType) {
  const char* dir = std::getenv("MEMSWEEP_HF_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "needs MEMSWEEP_HF_REFERENCE_DIR: ctest runs it through "
                    "HfReference (tests/support/reference_test.sh), which makes the "
                    "references with transformers";
  }
  std::vector<std::string> cases;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory()) cases.push_back(entry.path().string());
  }
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 6u) << "expected llama, llama_tied, mistral, qwen2, phi3_short and "
                                 "phi3_long cases";
  for (const std::string& path : cases) {
    const std::string name = std::filesystem::path(path).filename().string();
    const LlamaConfig config = ReadHuggingFaceConfig(path);
    const SafetensorsSet weights = OpenSafetensors(path + "/model.safetensors");
    CheckWeights(weights, config);
    LlamaModel model(config);
    LoadWeights(*model, weights);
    model->SetAttention(plugins::EagerCausalAttention);

    const SafetensorsSet reference = OpenSafetensors(path + "/reference.safetensors");
    const at::Tensor ids = reference.Read(*reference.Find("input_ids")).clone();
    const int64_t b = ids.size(0), t = ids.size(1);
    const at::Tensor positions = at::arange(t, at::kLong).unsqueeze(0).expand({b, t}).contiguous();
    const at::Tensor logits = model->forward(ids, positions);
    ExpectClose(logits.detach(), reference.Read(*reference.Find("logits")), name + " logits");

    at::Tensor targets = at::full({b, t}, data::kIgnoreIndex, at::kLong);
    targets.narrow(1, 0, t - 1).copy_(ids.narrow(1, 1, t - 1));
    const at::Tensor loss = NextTokenLoss(logits, targets, static_cast<double>(b * (t - 1)));
    ExpectClose(loss.detach().reshape({1}), reference.Read(*reference.Find("loss")),
                name + " loss");

    loss.backward();
    const auto params = model->named_parameters();
    const auto slices = HuggingFaceParameters(config);
    int compared = 0;
    for (const auto& [key, entry] : reference.Entries()) {
      if (key.rfind("grad.", 0) != 0) continue;
      const std::string hf_name = key.substr(5);
      ASSERT_TRUE(slices.count(hf_name)) << name << ": no memsweep parameter for " << hf_name;
      std::vector<at::Tensor> parts;
      for (const ParameterSlice& s : slices.at(hf_name)) {
        parts.push_back(params[s.parameter].grad());
      }
      ExpectClose(parts.size() == 1 ? parts[0] : at::cat(parts), reference.Read(entry),
                  name + " grad " + hf_name);
      ++compared;
    }
    EXPECT_GE(compared, 7) << name;
  }
}

}  // namespace
}  // namespace memsweep::model
