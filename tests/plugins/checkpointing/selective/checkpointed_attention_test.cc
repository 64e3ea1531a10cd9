#include "checkpointing/selective/checkpointed_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "plugins/checkpointing/checkpointing_test_support.h"

namespace memsweep::plugins::checkpointing {
namespace {

using testing_support::ExpectBitwiseEqualGrads;
using testing_support::Plain;
using testing_support::RunnerFactory;
using testing_support::RunOneStep;
using testing_support::TrainWith;

RunnerFactory Selective() {
  return [](const model::LlamaModelImpl&) {
    return model::BlockRunner(RunBlockWithCheckpointedAttention);
  };
}

at::Tensor DropoutAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const model::AttentionInputs& inputs) {
  return at::dropout(EagerCausalAttention(q, k, v, inputs), 0.25, /*train=*/true);
}

TEST(SelectiveCheckpointingTest, GradientsAreBitwiseEqualToThePlainRun) {
  const auto plain = RunOneStep(Plain(), 3);
  const auto selective = RunOneStep(Selective(), 3);
  ExpectBitwiseEqualGrads(plain, selective);
  EXPECT_TRUE(at::equal(plain.after, selective.after));  // the generator is left alone
}

TEST(SelectiveCheckpointingTest, RecomputeReplaysTheForwardsRandomNumbers) {
  const auto plain = RunOneStep(Plain(), 3, DropoutAttention);
  const auto selective = RunOneStep(Selective(), 3, DropoutAttention);
  ExpectBitwiseEqualGrads(plain, selective);
  EXPECT_TRUE(at::equal(plain.after, selective.after));
}

TEST(SelectiveCheckpointingTest, CheckpointedAttentionMatchesTheCoreItWraps) {
  torch::manual_seed(1);
  const at::Tensor q = at::randn({2, 4, 10, 8}).requires_grad_(true);
  const at::Tensor k = at::randn({2, 2, 10, 8}).requires_grad_(true);
  const at::Tensor v = at::randn({2, 2, 10, 8}).requires_grad_(true);
  const at::Tensor segments = at::tensor({0, 0, 0, 1, 1, 1, 1, 2, 2, 2}, at::kLong)
                                  .unsqueeze(0).expand({2, 10}).contiguous();
  const model::AttentionInputs inputs{at::arange(10, at::kLong).unsqueeze(0), segments};
  const at::Tensor grad = at::randn({2, 4, 10, 8});
  const at::Tensor plain = EagerCausalAttention(q, k, v, inputs);
  const auto expected = torch::autograd::grad({plain}, {q, k, v}, {grad});
  const at::Tensor wrapped = CheckpointAttention(EagerCausalAttention)(q, k, v, inputs);
  EXPECT_TRUE(at::equal(plain, wrapped));
  const auto actual = torch::autograd::grad({wrapped}, {q, k, v}, {grad});
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(at::equal(expected[i], actual[i])) << i;
}

TEST(SelectiveCheckpointingTest, TrainingLossesAreBitwiseEqualToNone) {
  const train::RunResult none = TrainWith("none");
  const train::RunResult selective = TrainWith("selective");
  ASSERT_EQ(selective.status, train::RunStatus::kOk) << selective.error;
  EXPECT_EQ(testing_support::Losses(none), testing_support::Losses(selective));
}

TEST(SelectiveCheckpointingTest, KeepsFewerActivationsThanNoneAndMoreThanFull) {
  const std::vector<std::string> longer = {"strategies.batching.seq_len=128"};
  const train::RunResult none = TrainWith("none", longer, 1);
  const train::RunResult selective = TrainWith("selective", longer, 1);
  const train::RunResult full = TrainWith("full", longer, 1);
  ASSERT_EQ(selective.status, train::RunStatus::kOk) << selective.error;
  EXPECT_LT(selective.memory.saved_activations_bytes, none.memory.saved_activations_bytes);
  EXPECT_GT(selective.memory.saved_activations_bytes, full.memory.saved_activations_bytes);
  EXPECT_LT(selective.memory.activations_bytes, none.memory.activations_bytes);
}

}  // namespace
}  // namespace memsweep::plugins::checkpointing
