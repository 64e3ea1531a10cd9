// precision/bf16: bf16 parameters and gradients with fp32 master weights. Byte figures are
// checked exactly against the parameter count; the loss trajectory against fp32 within the
// tolerance documented in plugins/precision/bf16/README.md.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "attention/eager/eager_attention.h"
#include "core/memory/storage_bytes.h"
#include "core/model/llama.h"
#include "core/results/loss_verification.h"
#include "precision/bf16/master_weights.h"
#include "support/run_configs.h"

namespace memsweep {
namespace {

using plugins::precision::MasterWeights;
using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

const std::vector<std::string> kFixedShape = {"strategies.batching.padding=max_length",
                                              "strategies.batching.micro_batch_size=4"};

std::vector<std::string> WithPrecision(const std::string& plugin) {
  std::vector<std::string> overrides = kFixedShape;
  overrides.push_back("strategies.precision.plugin=" + plugin);
  return overrides;
}

// The strategy a run would use in `slot`.
std::shared_ptr<Strategy> SlotStrategy(const config::RunConfig& cfg, const std::string& slot) {
  for (const auto& active : config::InstantiateStrategies(cfg)) {
    if (active.slot == slot) return active.impl;
  }
  return nullptr;
}

// A seeded tiny model with eager attention, and one batch of random tokens.
struct TinyModel {
  model::LlamaModel model{nullptr};
  at::Tensor ids, positions;

  TinyModel() {
    torch::manual_seed(7);
    model = model::LlamaModel(model::LlamaPreset("tiny").value());
    model->SetAttention(plugins::EagerCausalAttention);
    const int64_t b = 2, t = 16;
    ids = at::randint(model->config().vocab_size, {b, t}, at::kLong);
    positions = at::arange(t, at::kLong).unsqueeze(0).expand({b, t}).contiguous();
  }
  at::Tensor Loss() {
    return model::NextTokenLoss(model->forward(ids, positions), ids, ids.numel());
  }
};

TEST(Bf16PrecisionTest, RunBreakdownCountsBf16ParamsAndFp32MastersExactly) {
  const config::RunConfig bf16_cfg = TinyRun(2, WithPrecision("bf16"));
  const train::RunResult fp32 = Train(TinyRun(2, WithPrecision("fp32")));
  const train::RunResult bf16 = Train(bf16_cfg);
  ASSERT_EQ(bf16.status, train::RunStatus::kOk) << bf16.error;
  const int64_t n = bf16_cfg.model.llama.ParameterCount();
  EXPECT_EQ(fp32.memory.params_bytes, 4 * n);
  EXPECT_EQ(bf16.memory.params_bytes, 2 * n);  // half of fp32
  EXPECT_EQ(2 * bf16.memory.params_bytes, fp32.memory.params_bytes);
  // Optimizer state: fp32 exp_avg + exp_avg_sq (8 B/param) + fp32 master weights (4 B/param).
  EXPECT_EQ(fp32.memory.optimizer_bytes, 8 * n);
  EXPECT_EQ(bf16.memory.optimizer_bytes, 8 * n + 4 * n);
  // At the update the gradients are the masters' fp32 gradients (the bf16 ones are released as
  // each is widened): 4 B/param, as in fp32.
  EXPECT_EQ(bf16.memory.grads_bytes, 4 * n);
  EXPECT_EQ(bf16.memory.activations_bytes,
            bf16.memory.peak_allocated_bytes - (2 * n + 4 * n + 12 * n));
}

TEST(Bf16PrecisionTest, BackwardLeavesBf16GradientsOfHalfTheFp32Bytes) {
  TinyModel tiny;
  const std::vector<at::Tensor> params = tiny.model->parameters();
  const int64_t n = tiny.model->config().ParameterCount();
  MasterWeights weights = MasterWeights::Convert(params);
  EXPECT_EQ(memory::DistinctStorageBytes(params), 2 * n);
  EXPECT_EQ(memory::DistinctStorageBytes(weights.masters()), 4 * n);
  tiny.Loss().backward();
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().scalar_type(), at::kBFloat16);
    grads.push_back(p.grad());
  }
  EXPECT_EQ(memory::DistinctStorageBytes(grads), 2 * n);
  weights.GradientsToMasters();
  std::vector<at::Tensor> master_grads;
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_FALSE(params[i].grad().defined()) << "bf16 gradient not released";
    ASSERT_EQ(weights.masters()[i].grad().scalar_type(), at::kFloat);
    master_grads.push_back(weights.masters()[i].grad());
  }
  EXPECT_EQ(memory::DistinctStorageBytes(master_grads), 4 * n);
}

// Drives the loaded plugin through the hooks the trainer calls, around the optimizer slot's
// default (optimizer/adamw).
TEST(Bf16PrecisionTest, PluginUpdatesFp32MastersAndRoundsThemIntoTheParameters) {
  const config::RunConfig cfg = TinyRun(1, WithPrecision("bf16"));
  const std::shared_ptr<Strategy> strategy = SlotStrategy(cfg, "precision");
  auto* precision = dynamic_cast<PrecisionStrategy*>(strategy.get());
  ASSERT_NE(precision, nullptr);
  EXPECT_FALSE(precision->MathPreserving());
  EXPECT_EQ(precision->ComputeDtype(), at::kBFloat16);

  TinyModel tiny;
  const std::vector<at::Tensor> initial = [&] {
    std::vector<at::Tensor> copies;
    for (const at::Tensor& p : tiny.model->parameters()) copies.push_back(p.detach().clone());
    return copies;
  }();
  RunContext context;
  context.model = tiny.model.get();
  precision->OnStageEnd(Stage::kModel, context);
  const std::vector<at::Tensor> params = tiny.model->parameters();
  const std::vector<at::Tensor> masters = precision->OptimizerParameters(params);
  ASSERT_EQ(masters.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].scalar_type(), at::kBFloat16);
    EXPECT_EQ(masters[i].scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(masters[i], initial[i])) << "masters start from the fp32 init";
  }

  // A learning rate small enough that many updates are below one bf16 step of the weight: the
  // masters must keep them, the parameters are the masters rounded to bf16.
  const std::shared_ptr<Strategy> adamw = SlotStrategy(cfg, "optimizer");
  auto* optimizer_slot = dynamic_cast<OptimizerStrategy*>(adamw.get());
  ASSERT_NE(optimizer_slot, nullptr);
  const std::unique_ptr<Optimizer> optimizer = optimizer_slot->MakeOptimizer(masters);
  tiny.Loss().backward();
  precision->OnStageBegin(Stage::kOptimizerStep, context);
  OptimizerStepSpec spec;
  spec.lr = 1e-4;
  spec.weight_decay = 0.1;
  spec.step = 1;
  optimizer->Step(spec);
  precision->OnStageEnd(Stage::kOptimizerStep, context);
  int64_t kept_below_bf16 = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(masters[i].scalar_type(), at::kFloat);
    EXPECT_FALSE(at::equal(masters[i], initial[i])) << "master " << i << " was not updated";
    EXPECT_TRUE(at::equal(params[i], masters[i].to(at::kBFloat16)))
        << "parameter " << i << " is not its master rounded to bf16";
    kept_below_bf16 += masters[i].ne(params[i].to(at::kFloat)).sum().item<int64_t>();
  }
  EXPECT_GT(kept_below_bf16, 0) << "the masters hold nothing beyond bf16 precision";
  ASSERT_EQ(optimizer->StateTensors().size(), 2 * masters.size());
  for (const at::Tensor& state : optimizer->StateTensors()) {
    EXPECT_EQ(state.scalar_type(), at::kFloat);
  }
}

// Under ZeRO the sharding plugin owns the update: the masters are handed over (fp32, the init's
// values) and from then on the plugin's optimizer_step hooks leave gradients and parameters alone.
TEST(Bf16PrecisionTest, HandedOverMastersAreNoLongerTouchedByThePlugin) {
  const config::RunConfig cfg = TinyRun(1, WithPrecision("bf16"));
  const std::shared_ptr<Strategy> strategy = SlotStrategy(cfg, "precision");
  auto* precision = dynamic_cast<PrecisionStrategy*>(strategy.get());
  ASSERT_NE(precision, nullptr);
  TinyModel tiny;
  RunContext context;
  context.model = tiny.model.get();
  precision->OnStageEnd(Stage::kModel, context);
  const std::vector<at::Tensor> params = tiny.model->parameters();
  const std::vector<at::Tensor> masters = precision->HandOverOptimizerParameters(params);
  ASSERT_EQ(masters.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(masters[i].scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(params[i], masters[i].to(at::kBFloat16))) << "parameter " << i;
  }
  tiny.Loss().backward();
  const at::Tensor master_before = masters[0].detach().clone();
  {
    torch::NoGradGuard no_grad;
    masters[0].add_(1.0);  // a sharding plugin's update, not yet written to the parameter
  }
  const at::Tensor param_before = params[0].detach().clone();
  precision->OnStageBegin(Stage::kOptimizerStep, context);
  precision->OnStageEnd(Stage::kOptimizerStep, context);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(params[i].grad().defined()) << "gradient " << i << " was moved";
    EXPECT_EQ(params[i].grad().scalar_type(), at::kBFloat16);
    EXPECT_FALSE(masters[i].grad().defined()) << "master " << i << " got a gradient";
  }
  EXPECT_TRUE(at::equal(params[0], param_before)) << "the master was copied back";
  EXPECT_TRUE(at::equal(masters[0], master_before + 1.0));
}

// The SDK's defaults: a precision strategy that updates the parameters themselves hands them over
// as they are; a sharding strategy that owns the update but does not take master copies refuses
// them instead of training with masters nobody updates.
TEST(Bf16PrecisionTest, SdkDefaultsHandOverParametersAndRefuseMasters) {
  struct Plain : PrecisionStrategy {
    c10::ScalarType ComputeDtype() const override { return at::kFloat; }
  } plain;
  struct OwnsStep : ShardingStrategy {
    bool OwnsOptimizerStep() const override { return true; }
  } owns_step;
  TinyModel tiny;
  RunContext context;
  context.model = tiny.model.get();
  const std::vector<at::Tensor> params = tiny.model->parameters();
  const std::vector<at::Tensor> handed = plain.HandOverOptimizerParameters(params);
  ASSERT_EQ(handed.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(handed[i].is_same(params[i]));
  EXPECT_NO_THROW(owns_step.AdoptOptimizerParameters(context, handed));

  std::vector<at::Tensor> copies;
  for (const at::Tensor& p : params) copies.push_back(p.detach().clone());
  try {
    owns_step.AdoptOptimizerParameters(context, copies);
    FAIL() << "master copies were accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("AdoptOptimizerParameters"), std::string::npos) << e.what();
  }
  struct KeepsMasters : PrecisionStrategy {
    explicit KeepsMasters(std::vector<at::Tensor> m) : masters(std::move(m)) {}
    c10::ScalarType ComputeDtype() const override { return at::kBFloat16; }
    std::vector<at::Tensor> OptimizerParameters(const std::vector<at::Tensor>&) override {
      return masters;
    }
    std::vector<at::Tensor> masters;
  } keeps_masters(copies);
  try {
    keeps_masters.HandOverOptimizerParameters(params);
    FAIL() << "a strategy with masters handed them over without implementing the hand-over";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("HandOverOptimizerParameters"), std::string::npos)
        << e.what();
  }
}

// Documented in plugins/precision/bf16/README.md: close to fp32 for the first 5 steps on tiny,
// and clearly learning over 20 steps (the mean of the last 5 losses below 0.8x the first).
// "Close" is memsweep's definition of approximately the same training, the tolerance its
// verification calls `close` (docs/results.md): bf16 parameters against fp32 ones is no
// reordering of the same arithmetic, and the losses alone give no rounding bound for it (the
// loss moves with the bf16 rounding of the logits, whose scale the losses do not reveal).
TEST(Bf16PrecisionTest, LossDecreasesAndStaysNearFp32EarlyOn) {
  constexpr int kSteps = 20, kEarlySteps = 5;
  const double kEarlyRelativeTolerance = results::ApproximateTolerance("bfloat16").value();
  const train::RunResult fp32 = Train(TinyRun(kSteps, WithPrecision("fp32")));
  const train::RunResult bf16 = Train(TinyRun(kSteps, WithPrecision("bf16")));
  ASSERT_EQ(bf16.status, train::RunStatus::kOk) << bf16.error;
  const std::vector<double> a = Losses(fp32), b = Losses(bf16);
  ASSERT_EQ(b.size(), static_cast<size_t>(kSteps));
  for (int i = 0; i < kEarlySteps; ++i) {
    EXPECT_NEAR(b[i], a[i], kEarlyRelativeTolerance * a[i]) << "step " << i;
  }
  EXPECT_NE(a, b) << "bf16 should change the math";
  const double first = b.front();
  const double last_five = (b[kSteps - 1] + b[kSteps - 2] + b[kSteps - 3] + b[kSteps - 4] +
                            b[kSteps - 5]) / 5.0;
  EXPECT_LT(last_five, 0.8 * first) << "bf16 loss did not decrease: " << first << " -> "
                                    << last_five;
  for (double loss : b) EXPECT_TRUE(std::isfinite(loss));
}

}  // namespace
}  // namespace memsweep
