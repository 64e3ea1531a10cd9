#include "checkpointing/full/full_checkpointing.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include "plugins/checkpointing/checkpointing_test_support.h"

namespace memsweep::plugins::checkpointing {
namespace {

using testing_support::ExpectBitwiseEqualGrads;
using testing_support::Plain;
using testing_support::RunnerFactory;
using testing_support::RunOneStep;
using testing_support::TrainWith;

RunnerFactory Full() {
  return [](const model::LlamaModelImpl&) { return MakeFullCheckpointingRunner(); };
}

// Eager attention followed by dropout: the recompute must draw the same mask.
at::Tensor DropoutAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const model::AttentionInputs& inputs) {
  return at::dropout(EagerCausalAttention(q, k, v, inputs), 0.25, /*train=*/true);
}

TEST(FullCheckpointingTest, GradientsAreBitwiseEqualToThePlainRun) {
  ExpectBitwiseEqualGrads(RunOneStep(Plain()), RunOneStep(Full()));
}

TEST(FullCheckpointingTest, LeavesTheGeneratorWhereThePlainRunLeavesIt) {
  // No dropout in the model: the recompute must not advance the generator either.
  EXPECT_TRUE(at::equal(RunOneStep(Plain()).after, RunOneStep(Full()).after));
}

TEST(FullCheckpointingTest, RecomputeReplaysTheForwardsRandomNumbers) {
  const auto plain = RunOneStep(Plain(), 3, DropoutAttention);
  const auto full = RunOneStep(Full(), 3, DropoutAttention);
  ExpectBitwiseEqualGrads(plain, full);
  EXPECT_TRUE(at::equal(plain.after, full.after));
}

TEST(FullCheckpointingTest, RecomputeRunsUnderTheForwardsAutocastState) {
  // The forward runs under bf16 autocast, backward outside it (as the precision hooks do).
  auto under_autocast = [](const std::function<at::Tensor()>& forward) {
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::Tensor loss = forward();
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
    return loss;
  };
  const auto plain = RunOneStep(Plain(), 2, EagerCausalAttention, under_autocast);
  const auto full = RunOneStep(Full(), 2, EagerCausalAttention, under_autocast);
  ExpectBitwiseEqualGrads(plain, full);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
}

TEST(FullCheckpointingTest, WithoutGradModeTheBlockSimplyRuns) {
  torch::manual_seed(0);
  model::LlamaModel m(*model::LlamaPreset("tiny"));
  m->SetAttention(EagerCausalAttention);
  const at::Tensor ids = at::randint(0, 259, {1, 8}, at::kLong);
  const at::Tensor positions = at::arange(8, at::kLong).unsqueeze(0);
  at::NoGradGuard no_grad;
  const at::Tensor plain = m->forward(ids, positions);
  m->SetBlockRunner(MakeFullCheckpointingRunner());
  EXPECT_TRUE(at::equal(plain, m->forward(ids, positions)));
}

TEST(FullCheckpointingTest, TrainingLossesAreBitwiseEqualToNone) {
  const train::RunResult none = TrainWith("none");
  const train::RunResult full = TrainWith("full");
  ASSERT_EQ(none.status, train::RunStatus::kOk) << none.error;
  ASSERT_EQ(full.status, train::RunStatus::kOk) << full.error;
  EXPECT_EQ(testing_support::Losses(none), testing_support::Losses(full));
  // Each step's gradient norm too: the gradients themselves are equal.
  for (size_t i = 0; i < none.steps.size(); ++i) {
    EXPECT_EQ(none.steps[i].grad_norm, full.steps[i].grad_norm) << "step " << i;
  }
}

// Several steps, so that a recompute's autocast cache could leak into the next step's forward
// (stale bf16 copies of weights the optimizer has since changed).
TEST(FullCheckpointingTest, UnderBf16AutocastTrainingLossesAreBitwiseEqualToNone) {
  const std::vector<std::string> bf16 = {"strategies.precision.plugin=bf16-autocast"};
  const train::RunResult none = TrainWith("none", bf16, 3);
  const train::RunResult full = TrainWith("full", bf16, 3);
  ASSERT_EQ(none.status, train::RunStatus::kOk) << none.error;
  ASSERT_EQ(full.status, train::RunStatus::kOk) << full.error;
  EXPECT_EQ(testing_support::Losses(none), testing_support::Losses(full));
}

TEST(FullCheckpointingTest, KeepsFarFewerActivationsForBackward) {
  const train::RunResult none = TrainWith("none", {"strategies.batching.seq_len=128"}, 1);
  const train::RunResult full = TrainWith("full", {"strategies.batching.seq_len=128"}, 1);
  ASSERT_EQ(full.status, train::RunStatus::kOk) << full.error;
  ASSERT_GT(none.memory.saved_activations_bytes, 0);
  // Only each block's input stays (plus the final norm and LM head's activations).
  EXPECT_LT(full.memory.saved_activations_bytes, none.memory.saved_activations_bytes / 2)
      << "none " << none.memory.saved_activations_bytes << ", full "
      << full.memory.saved_activations_bytes;
  EXPECT_LT(full.memory.activations_bytes, none.memory.activations_bytes);
}

}  // namespace
}  // namespace memsweep::plugins::checkpointing
