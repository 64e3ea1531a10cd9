// adapter/lora in training runs: step 0 is the base model's, only the factors train, the
// breakdown counts frozen and trainable parameters apart, the merged weight reproduces the
// adapted model, and the factors' gradients match a float64 computation.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <cmath>
#include <functional>

#include "core/config/strategy_resolver.h"
#include "core/model/llama.h"
#include "core/train/trainer.h"
#include "memsweep/strategy.h"
#include "support/run_configs.h"

namespace memsweep::plugins::adapter {
namespace {

using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

// A callback that runs test code at the end of the model stage and of the run, with the model.
class Probe final : public CallbackStrategy {
 public:
  std::function<void(RunContext&)> after_model, at_run_end;
  int calls = 0;
  void OnStageEnd(Stage stage, RunContext& ctx) override {
    if (stage == Stage::kModel && after_model) ++calls, after_model(ctx);
    if (stage == Stage::kRunEnd && at_run_end) ++calls, at_run_end(ctx);
  }
};

// Trains with `probe` among the callbacks; every hook it was given must have run.
train::RunResult TrainWithProbe(const config::RunConfig& cfg, std::shared_ptr<Probe> probe) {
  plugin::StrategySet strategies = config::InstantiateStrategies(cfg);
  strategies.push_back({"callbacks", "probe", "0", probe});
  train::RunResult result = train::Trainer(cfg, std::move(strategies)).Run();
  EXPECT_EQ(probe->calls, (probe->after_model ? 1 : 0) + (probe->at_run_end ? 1 : 0));
  return result;
}

std::vector<std::string> Lora(std::vector<std::string> more = {}) {
  more.push_back("strategies.adapter.plugin=\"lora\"");
  more.push_back("strategies.adapter.rank=4");
  return more;
}

TEST(LoraTrainingTest, StepZeroIsTheBaseModelBitwise) {
  const train::RunResult base = Train(TinyRun(1));
  const train::RunResult lora = Train(TinyRun(1, Lora()));
  ASSERT_EQ(base.status, train::RunStatus::kOk) << base.error;
  ASSERT_EQ(lora.status, train::RunStatus::kOk) << lora.error;
  EXPECT_EQ(Losses(base)[0], Losses(lora)[0]);  // bitwise: B = 0 adds exact zeros
}

TEST(LoraTrainingTest, OnlyTheFactorsTrainAndTheBreakdownCountsThemApart) {
  const config::RunConfig cfg = TinyRun(3, Lora());
  auto probe = std::make_shared<Probe>();
  std::vector<at::Tensor> frozen_before, frozen_params, factors;
  int64_t factor_elements = 0, frozen_bytes = 0;
  probe->after_model = [&](RunContext& ctx) {
    for (const at::Tensor& p : ctx.model->Parameters()) {
      if (p.requires_grad()) {
        factors.push_back(p);
        factor_elements += p.numel();
      } else {
        frozen_params.push_back(p);
        frozen_before.push_back(p.detach().clone());
        frozen_bytes += p.numel() * static_cast<int64_t>(p.element_size());
      }
    }
  };
  bool factors_moved = false;
  probe->at_run_end = [&](RunContext&) {
    for (size_t i = 0; i < frozen_params.size(); ++i) {
      EXPECT_TRUE(at::equal(frozen_params[i], frozen_before[i])) << "frozen parameter " << i;
    }
    for (const at::Tensor& f : factors) factors_moved |= f.abs().sum().item<double>() > 0;
  };
  const train::RunResult r = TrainWithProbe(cfg, probe);
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  EXPECT_TRUE(factors_moved);
  const model::LlamaConfig& m = cfg.model.llama;
  // Every parameter of the model is frozen; the factors are A [4, in] and B [out, 4] per module.
  EXPECT_EQ(frozen_bytes, m.ParameterCount() * 4);
  const int64_t h = m.hidden_size, kv = m.KvDim(), q = m.QDim(), i = m.intermediate_size;
  const int64_t per_block = 4 * ((h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h));
  EXPECT_EQ(factor_elements, per_block * m.num_hidden_layers);
  EXPECT_EQ(r.summary.trainable_params, factor_elements);
  EXPECT_EQ(r.memory.frozen_params_bytes, frozen_bytes);
  EXPECT_EQ(r.memory.trainable_params_bytes, factor_elements * 4);
  EXPECT_EQ(r.memory.params_bytes, frozen_bytes + factor_elements * 4);
  // No gradient and no optimizer state for the frozen base: AdamW's two moments per factor.
  EXPECT_EQ(r.memory.optimizer_bytes, 2 * factor_elements * 4);
  EXPECT_LE(r.memory.grads_bytes, factor_elements * 4);
}

// W + B·A·alpha/r in place of the adapter gives the adapted model's logits, within fp32
// rounding of the merged product (a few units of the last place of the logits' magnitude).
TEST(LoraTrainingTest, TheMergedWeightReproducesTheAdaptedLogits) {
  const config::RunConfig cfg = TinyRun(3, Lora({"strategies.adapter.alpha=8"}));
  auto probe = std::make_shared<Probe>();
  probe->at_run_end = [&](RunContext& ctx) {
    auto* llama = dynamic_cast<model::LlamaModelImpl*>(ctx.model);
    ASSERT_NE(llama, nullptr);
    at::NoGradGuard no_grad;
    torch::manual_seed(7);
    const at::Tensor ids = at::randint(0, cfg.model.llama.vocab_size, {2, 16}, at::kLong);
    const at::Tensor pos = at::arange(16, at::kLong).unsqueeze(0).expand({2, 16}).contiguous();
    const at::Tensor adapted = llama->forward(ids, pos);
    // The factors, by module, from the model's parameters named *_lora_A / *_lora_B.
    int merged_layers = 0;
    for (model::LinearLayer* layer : llama->Linears()) {
      if (!layer->forward) continue;
      ++merged_layers;
      // Run the layer's own forward on the identity: its rows are W + ΔW (x·Wᵀ with x = I).
      const int64_t in = layer->shape.in_features;
      const at::Tensor eye = at::eye(in, layer->weight.options());
      const at::Tensor merged = layer->forward(eye, layer->weight, {}).t().contiguous();
      layer->weight.copy_(merged);
      layer->forward = nullptr;
    }
    const at::Tensor merged_logits = llama->forward(ids, pos);
    const double scale = adapted.abs().max().item<double>();
    const double diff = (adapted - merged_logits).abs().max().item<double>();
    // Each logit sums over the hidden width: rounding of order width · eps32 · scale.
    const double bound = static_cast<double>(cfg.model.llama.hidden_size) * 1.2e-7 * scale;
    EXPECT_LE(diff, bound) << "scale " << scale;
    EXPECT_GT(merged_layers, 0);
    std::printf("merged logits: largest difference %.3g, bound %.3g\n", diff, bound);
  };
  ASSERT_EQ(TrainWithProbe(cfg, probe).status, train::RunStatus::kOk);
}

// The gradients of A and B (after training moved them off their initial values) against the
// same model computed in float64.
TEST(LoraTrainingTest, FactorGradientsMatchAFloat64Computation) {
  const config::RunConfig cfg = TinyRun(2, Lora({"strategies.adapter.alpha=8"}));
  auto probe = std::make_shared<Probe>();
  probe->at_run_end = [&](RunContext& ctx) {
    auto* llama = dynamic_cast<model::LlamaModelImpl*>(ctx.model);
    ASSERT_NE(llama, nullptr);
    torch::manual_seed(3);
    const at::Tensor ids = at::randint(0, cfg.model.llama.vocab_size, {2, 16}, at::kLong);
    const at::Tensor targets = at::randint(0, cfg.model.llama.vocab_size, {2, 16}, at::kLong);
    const at::Tensor pos = at::arange(16, at::kLong).unsqueeze(0).expand({2, 16}).contiguous();
    std::vector<at::Tensor> factors;
    for (const at::Tensor& p : llama->Parameters()) {
      if (p.requires_grad()) factors.push_back(p);
    }
    const auto grads = [&] {
      for (at::Tensor& f : factors) f.mutable_grad() = at::Tensor();
      const at::Tensor logits = llama->forward(ids, pos);
      at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(at::kDouble),
                             targets.reshape({-1}))
          .backward();
      std::vector<at::Tensor> g;
      for (const at::Tensor& f : factors) g.push_back(f.grad().to(at::kDouble));
      return g;
    };
    const std::vector<at::Tensor> g32 = grads();
    {
      at::NoGradGuard no_grad;
      for (at::Tensor p : llama->Parameters()) p.set_data(p.to(at::kDouble));
    }
    const std::vector<at::Tensor> g64 = grads();
    ASSERT_EQ(factors.size(), static_cast<size_t>(2 * 7 * cfg.model.llama.num_hidden_layers));
    double worst = 0.0;
    for (size_t i = 0; i < factors.size(); ++i) {
      const double norm = g64[i].norm().item<double>();
      ASSERT_GT(norm, 0.0) << "factor " << i;
      // fp32 forward and backward through a 2-block model: relative error of order
      // (depth · width) · eps32 ≈ 1e-5 at this size.
      const double rel = (g32[i] - g64[i]).norm().item<double>() / norm;
      worst = std::max(worst, rel);
      EXPECT_LE(rel, 2e-5) << "factor " << i;
    }
    std::printf("factor gradients: largest relative difference from float64 %.3g\n", worst);
  };
  ASSERT_EQ(TrainWithProbe(cfg, probe).status, train::RunStatus::kOk);
}

TEST(LoraTrainingTest, AFrozenBaseInBf16HalvesItsBytesAndStillTrains) {
  const train::RunResult fp32 = Train(TinyRun(2, Lora()));
  const train::RunResult bf16 = Train(TinyRun(2, Lora({"strategies.adapter.base_dtype=\"bf16\""})));
  ASSERT_EQ(bf16.status, train::RunStatus::kOk) << bf16.error;
  EXPECT_EQ(bf16.memory.frozen_params_bytes * 2, fp32.memory.frozen_params_bytes);
  EXPECT_EQ(bf16.memory.trainable_params_bytes, fp32.memory.trainable_params_bytes);
  EXPECT_TRUE(std::isfinite(Losses(bf16).back()));
}

}  // namespace
}  // namespace memsweep::plugins::adapter
