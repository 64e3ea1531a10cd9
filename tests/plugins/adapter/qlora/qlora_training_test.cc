// adapter/qlora in training runs: the frozen base's bytes as computed from the shapes, a model
// stage that never holds the full-precision base beside its NF4 copy, step 0's logits those of
// the dequantised base, and its refusals.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <tuple>

#include "core/config/config_error.h"
#include "core/config/strategy_resolver.h"
#include "core/model/linear_shapes.h"
#include "core/model/llama.h"
#include "core/train/trainer.h"
#include "support/hf_named_weights.h"
#include "support/run_configs.h"

namespace memsweep::plugins::adapter {
namespace {

using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

std::vector<std::string> Qlora(std::vector<std::string> more = {}) {
  more.push_back("strategies.adapter.plugin=\"qlora\"");
  more.push_back("strategies.adapter.rank=4");
  return more;
}

// Bytes of an NF4 weight of n values: codes, 8-bit absmax, fp32 second-level absmax, offset.
int64_t Nf4Bytes(int64_t n) { return n / 2 + n / 64 + 4 * ((n / 64 + 255) / 256) + 4; }

TEST(QloraTrainingTest, TrainsAndTheFrozenBaseHoldsTheBytesTheShapesGive) {
  const config::RunConfig cfg = TinyRun(3, Qlora());
  const train::RunResult r = Train(cfg);
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  for (double loss : Losses(r)) EXPECT_TRUE(std::isfinite(loss));
  const model::ModelShape shape = model::ShapeOf(cfg.model.llama);
  int64_t quantised = 0, linear_values = 0;
  for (const model::LinearShape& l : shape.linears) {
    if (l.block < 0) continue;
    quantised += Nf4Bytes(l.in_features * l.out_features);
    linear_values += l.in_features * l.out_features;
  }
  // The rest of the model (norms, embedding, LM head) in base_dtype, bf16.
  const int64_t rest = (cfg.model.llama.ParameterCount() - linear_values) * 2;
  EXPECT_EQ(r.memory.frozen_params_bytes, quantised + rest);
  std::printf("tiny: frozen base %lld bytes (%lld of them NF4 for %lld weights: %.4f B/weight)\n",
              static_cast<long long>(r.memory.frozen_params_bytes),
              static_cast<long long>(quantised), static_cast<long long>(linear_values),
              static_cast<double>(quantised) / linear_values);
}

// Each block is quantised as soon as it is built: the model stage's peak stays below the
// full-precision base alone (the embedding's group, built in fp32 then converted, is the
// largest transient).
TEST(QloraTrainingTest, TheModelStageNeverHoldsTheFullPrecisionBase) {
  const config::RunConfig cfg = TinyRun(1, Qlora({"model.num_hidden_layers=8", "model.vocab_size=300"}));
  const train::RunResult r = Train(cfg);
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  int64_t model_peak = -1;
  for (const train::TimelinePoint& p : r.timeline) {
    if (std::string(p.stage) == "model") model_peak = p.peak_bytes - r.memory.baseline_bytes;
  }
  ASSERT_GE(model_peak, 0);
  const int64_t fp32_base = cfg.model.llama.ParameterCount() * 4;
  std::printf("model stage peak %lld bytes; the fp32 base alone %lld\n",
              static_cast<long long>(model_peak), static_cast<long long>(fp32_base));
  EXPECT_LT(model_peak, fp32_base / 2);
}

// Step 0: the quantised base with zero B is the model whose linear weights are the dequantised
// ones (compute_dtype fp32: the same sums, tiled).
TEST(QloraTrainingTest, StepZeroIsTheDequantisedBase) {
  const config::RunConfig cfg = TinyRun(
      1, Qlora({"strategies.adapter.compute_dtype=\"fp32\"", "strategies.adapter.base_dtype=\"fp32\""}));
  struct Probe final : CallbackStrategy {
    int ran = 0;
    void OnStageEnd(Stage stage, RunContext& ctx) override {
      if (stage != Stage::kModel) return;
      ++ran;
      auto* llama = dynamic_cast<model::LlamaModelImpl*>(ctx.model);
      ASSERT_NE(llama, nullptr);
      at::NoGradGuard no_grad;
      const at::Tensor ids = at::randint(0, 256, {2, 16}, at::kLong);
      const at::Tensor pos = at::arange(16, at::kLong).unsqueeze(0).expand({2, 16}).contiguous();
      const at::Tensor quantised = llama->forward(ids, pos);
      std::vector<std::tuple<model::LinearLayer*, model::LinearFn, at::Tensor>> kept;
      for (model::LinearLayer* layer : llama->Linears()) {
        if (!layer->forward) continue;
        ASSERT_EQ(layer->weight.scalar_type(), at::kByte);  // the parameter holds the codes
        const at::Tensor eye = at::eye(layer->shape.in_features);
        const at::Tensor dense = layer->forward(eye, layer->weight, {}).t().contiguous();
        kept.emplace_back(layer, layer->forward, layer->weight.detach());
        layer->weight.set_data(dense);
        layer->forward = nullptr;
      }
      const at::Tensor dense_logits = llama->forward(ids, pos);
      for (auto& [layer, forward, codes] : kept) {  // back to the quantised model for the run
        layer->weight.set_data(codes);
        layer->forward = forward;
      }
      const double scale = quantised.abs().max().item<double>();
      EXPECT_LE((quantised - dense_logits).abs().max().item<double>(),
                cfg_hidden * 1.2e-7 * scale * 4);
    }
    double cfg_hidden = 0;
  };
  auto probe = std::make_shared<Probe>();
  probe->cfg_hidden = static_cast<double>(cfg.model.llama.intermediate_size);
  plugin::StrategySet strategies = config::InstantiateStrategies(cfg);
  strategies.push_back({"callbacks", "probe", "0", probe});
  const train::RunResult r = train::Trainer(cfg, std::move(strategies)).Run();
  EXPECT_EQ(probe->ran, 1);
  EXPECT_EQ(r.status, train::RunStatus::kOk) << r.error;
}

// `[model] weights` with QLoRA: each group's base is loaded from the checkpoint, then quantised.
// A run from the seeded run's initial weights saved as safetensors trains exactly as the seeded
// QLoRA run (same NF4 codes, so the same losses bitwise, the same frozen bytes and peaks);
// weights from another seed train differently (the file was loaded, not the seed's weights).
TEST(QloraTrainingTest, LoadsSafetensorsWeightsThenQuantisesThem) {
  const config::RunConfig seeded = TinyRun(3, Qlora());
  const auto dir = std::filesystem::temp_directory_path() / "memsweep-qlora-weights";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const int64_t seed : {static_cast<int64_t>(seeded.experiment.seed), int64_t{99}}) {
    torch::manual_seed(seed);
    model::LlamaModel init(seeded.model.llama);
    testing_support::WriteSafetensors((dir / ("seed" + std::to_string(seed) + ".safetensors")).string(),
                                      testing_support::HuggingFaceNamed(*init));
  }
  const auto from_file = [&](int64_t seed) {
    return Train(TinyRun(3, Qlora({"model.weights=\"" +
                                   (dir / ("seed" + std::to_string(seed) + ".safetensors")).string() +
                                   "\""})));
  };
  // The NF4 code tables are made once per process (about 3 KB), and the process's first QLoRA run
  // counts them: the compared runs all come after one.
  ASSERT_EQ(Train(TinyRun(1, Qlora())).status, train::RunStatus::kOk);
  const train::RunResult a = Train(seeded);
  const train::RunResult same = from_file(seeded.experiment.seed);
  const train::RunResult other = from_file(99);
  ASSERT_EQ(a.status, train::RunStatus::kOk) << a.error;
  ASSERT_EQ(same.status, train::RunStatus::kOk) << same.error;
  ASSERT_EQ(other.status, train::RunStatus::kOk) << other.error;
  EXPECT_EQ(Losses(same), Losses(a));
  EXPECT_NE(Losses(other)[0], Losses(a)[0]);
  EXPECT_EQ(same.memory.frozen_params_bytes, a.memory.frozen_params_bytes);
  EXPECT_EQ(same.memory.peak_allocated_bytes, a.memory.peak_allocated_bytes);
  std::filesystem::remove_all(dir);
}

std::string ErrorOf(const std::vector<std::string>& overrides) {
  try {
    config::ValidateRun(TinyRun(1, overrides));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(QloraTrainingTest, BadSettingsAreRefusedBeforeAnythingRuns) {
  EXPECT_NE(ErrorOf(Qlora({"strategies.adapter.quantize=[\"qkv_proj\"]"}))
                .find("no module \"qkv_proj\"; its linear modules are"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Qlora({"strategies.adapter.compute_dtype=\"fp16\""}))
                .find("on the CPU use compute_dtype and base_dtype = \"bf16\" or \"fp32\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(Qlora({"strategies.adapter.compute_dtype=\"fp8\""}))
                .find("is not one of fp32, bf16, fp16"),
            std::string::npos);
  // ZeRO-3 partitions every parameter, the frozen base's too; zero1 and zero2 leave it alone.
  EXPECT_NE(ErrorOf(Qlora({"strategies.sharding.plugin=\"zero3\"", "device.world_size=2"}))
                .find("cannot leave a frozen base alone, and [strategies.adapter] plugin = "
                      "\"qlora\" freezes the model's parameters: use sharding \"zero2\" (or "
                      "\"zero1\", \"ddp\", \"none\") with an adapter"),
            std::string::npos);
  for (const char* zero : {"zero1", "zero2"}) {
    EXPECT_EQ(ErrorOf(Qlora({"strategies.sharding.plugin=\"" + std::string(zero) + "\"",
                             "device.world_size=2"})),
              "")
        << zero;
  }
}

}  // namespace
}  // namespace memsweep::plugins::adapter
