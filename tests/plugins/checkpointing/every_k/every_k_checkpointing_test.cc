#include "checkpointing/every_k/every_k_checkpointing.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "plugins/checkpointing/checkpointing_test_support.h"

namespace memsweep::plugins::checkpointing {
namespace {

using testing_support::ExpectBitwiseEqualGrads;
using testing_support::Plain;
using testing_support::RunnerFactory;
using testing_support::RunOneStep;
using testing_support::TrainWith;

RunnerFactory EveryK(int64_t k) {
  return [k](const model::LlamaModelImpl& m) {
    auto index = std::make_shared<BlockIndex>();
    index->Assign(m);
    return MakeEveryKRunner(k, index);
  };
}

TEST(EveryKCheckpointingTest, GradientsAreBitwiseEqualToThePlainRun) {
  const auto plain = RunOneStep(Plain(), 5);
  for (int64_t k : {1, 2, 3, 5, 7}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const auto every_k = RunOneStep(EveryK(k), 5);
    ExpectBitwiseEqualGrads(plain, every_k);
    EXPECT_TRUE(at::equal(plain.after, every_k.after));
  }
}

TEST(EveryKCheckpointingTest, RecomputesExactlyBlocksZeroKTwoK) {
  // Each checkpointed block calls attention twice (forward and recompute), the others once.
  for (auto [k, expected_calls] : std::vector<std::pair<int64_t, int>>{
           {1, 10}, {2, 8}, {3, 7}, {4, 7}, {5, 6}, {9, 6}}) {
    int calls = 0;
    auto counting = [&calls](const at::Tensor& q, const at::Tensor& kk, const at::Tensor& v,
                             const model::AttentionInputs& in) {
      ++calls;
      return EagerCausalAttention(q, kk, v, in);
    };
    RunOneStep(EveryK(k), 5, counting);
    EXPECT_EQ(calls, expected_calls) << "k=" << k;
  }
}

TEST(EveryKCheckpointingTest, RejectsKBelowOne) {
  EXPECT_THROW(ValidateEveryK(0), std::invalid_argument);
  EXPECT_THROW(ValidateEveryK(-3), std::invalid_argument);
  EXPECT_NO_THROW(ValidateEveryK(1));
  EXPECT_THROW(MakeEveryKRunner(0, std::make_shared<BlockIndex>()), std::invalid_argument);
  bool rejected = false;  // at plugin construction (an exception) or as a failed run
  try {
    rejected = TrainWith("every_k", {"strategies.checkpointing.k=0"}, 1).status !=
               train::RunStatus::kOk;
  } catch (const std::exception&) {
    rejected = true;
  }
  EXPECT_TRUE(rejected);
}

TEST(EveryKCheckpointingTest, ABlockOfAnotherModelIsAnError) {
  torch::manual_seed(0);
  model::LlamaModel indexed(*model::LlamaPreset("tiny"));
  model::LlamaModel other(*model::LlamaPreset("tiny"));
  BlockIndex index;
  index.Assign(*indexed);
  EXPECT_EQ(index.Of(*indexed->blocks()[1]), 1);
  EXPECT_THROW(index.Of(*other->blocks()[0]), std::runtime_error);
}

TEST(EveryKCheckpointingTest, TrainingLossesAreBitwiseEqualToNone) {
  const train::RunResult none = TrainWith("none");
  for (const char* k : {"1", "2"}) {
    const train::RunResult every_k =
        TrainWith("every_k", {std::string("strategies.checkpointing.k=") + k});
    ASSERT_EQ(every_k.status, train::RunStatus::kOk) << every_k.error;
    EXPECT_EQ(testing_support::Losses(none), testing_support::Losses(every_k)) << "k=" << k;
  }
}

TEST(EveryKCheckpointingTest, SavedActivationsLieBetweenNoneAndFull) {
  auto saved = [](const std::string& plugin, std::vector<std::string> more) {
    more.push_back("strategies.batching.seq_len=128");
    more.push_back("model.num_hidden_layers=4");
    const train::RunResult r = TrainWith(plugin, more, 1);
    EXPECT_EQ(r.status, train::RunStatus::kOk) << r.error;
    return r.memory.saved_activations_bytes;
  };
  const int64_t none = saved("none", {}), full = saved("full", {});
  const int64_t k2 = saved("every_k", {"strategies.checkpointing.k=2"});
  const int64_t k1 = saved("every_k", {"strategies.checkpointing.k=1"});
  EXPECT_EQ(k1, full);
  EXPECT_LT(k2, none);
  EXPECT_GT(k2, full);
}

}  // namespace
}  // namespace memsweep::plugins::checkpointing
