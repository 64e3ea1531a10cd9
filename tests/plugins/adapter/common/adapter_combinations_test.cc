// Every strategy of the other slots beside adapter/lora and adapter/qlora, one at a time, on the
// CPU: the math-preserving ones (checkpointing, attention kernels, micro-batching, the caching
// allocator, the empty_cache callback) give the adapter run's losses — bitwise where only the
// order of memory operations changes, within the fp32 trajectory tolerance where sums are
// reordered — and the others (packing, bf16 precision) train with the frozen base untouched and
// its bytes counted as the adapter alone counts them. fp16 loss scaling is CUDA-only: its
// combination with an adapter is a gpu test (tests/gpu/gpu_adapter_test.cc).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/strategy_resolver.h"
#include "core/train/trainer.h"
#include "memsweep/strategy.h"
#include "support/frozen_base_probe.h"
#include "support/run_configs.h"

namespace memsweep::plugins::adapter {
namespace {

using testing_support::ExpectSameTrajectory;
using testing_support::FrozenBaseProbe;
using testing_support::Losses;
using testing_support::StepPathTerms;
using testing_support::TinyRun;

constexpr int64_t kSteps = 3;

// How a combination's losses relate to the adapter run's without it.
enum class Expect {
  kBitwise,     // the same arithmetic in the same order
  kTrajectory,  // the same arithmetic in another order: the fp32 trajectory tolerance
  kTrains,      // another computation (other rows, other dtype): finite losses, base untouched
};

struct Combination {
  std::string name;
  std::vector<std::string> overrides;
  Expect expect;
};

struct Adapter {
  std::string name;
  std::vector<std::string> overrides;
};

std::vector<Adapter> Adapters() {
  // Dropout on the factors' input: a checkpointed block must redraw the same mask when it is
  // recomputed. QLoRA's products in fp32 so that reordered sums keep fp32's tolerance.
  return {{"lora",
           {"strategies.adapter.plugin=\"lora\"", "strategies.adapter.rank=4",
            "strategies.adapter.dropout=0.1"}},
          {"qlora",
           {"strategies.adapter.plugin=\"qlora\"", "strategies.adapter.rank=4",
            "strategies.adapter.dropout=0.1", "strategies.adapter.compute_dtype=\"fp32\""}}};
}

std::vector<Combination> Combinations() {
  return {
      {"checkpointing_full", {"strategies.checkpointing.plugin=\"full\""}, Expect::kBitwise},
      {"checkpointing_selective", {"strategies.checkpointing.plugin=\"selective\""},
       Expect::kBitwise},
      {"checkpointing_every_k",
       {"strategies.checkpointing.plugin=\"every_k\"", "strategies.checkpointing.k=2"},
       Expect::kBitwise},
      {"allocator_caching",
       {"strategies.allocator.plugin=\"caching\"",
        "strategies.allocator.expandable_segments=true"},
       Expect::kBitwise},
      {"callbacks_empty_cache",
       {"strategies.callbacks=[{plugin=\"empty_cache\", every=1}]"},
       Expect::kBitwise},
      {"attention_chunked", {"strategies.attention.plugin=\"chunked\""}, Expect::kTrajectory},
      {"attention_flash", {"strategies.attention.plugin=\"flash\""}, Expect::kTrajectory},
      {"attention_sdpa", {"strategies.attention.plugin=\"sdpa\""}, Expect::kTrajectory},
      // Without dropout: its masks are drawn per micro-batch, so another split draws others (as
      // in PEFT).
      {"micro_batch_2x2",
       {"strategies.batching.micro_batch_size=2", "strategies.batching.accumulation_steps=2",
        "strategies.adapter.dropout=0.0"},
       Expect::kTrajectory},
      {"packing_pack", {"strategies.packing.plugin=\"pack\""}, Expect::kTrains},
      {"packing_concat", {"strategies.packing.plugin=\"concat\""}, Expect::kTrains},
      {"packing_bucketed", {"strategies.packing.plugin=\"bucketed\""}, Expect::kTrains},
      {"precision_bf16", {"strategies.precision.plugin=\"bf16\""}, Expect::kTrains},
      {"precision_bf16_autocast", {"strategies.precision.plugin=\"bf16-autocast\""},
       Expect::kTrains},
  };
}

struct Probed {
  train::RunResult result;
  std::shared_ptr<FrozenBaseProbe> probe;
};

Probed TrainProbed(const config::RunConfig& cfg) {
  plugin::StrategySet strategies = config::InstantiateStrategies(cfg);
  auto probe = std::make_shared<FrozenBaseProbe>();
  strategies.push_back({"callbacks", "frozen-base-probe", "0", probe});
  return {train::Trainer(cfg, std::move(strategies)).Run(), probe};
}

std::vector<std::string> Joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class AdapterCombinationTest : public testing::TestWithParam<std::tuple<Adapter, Combination>> {};

TEST_P(AdapterCombinationTest, WorksBesideTheAdapter) {
  const auto& [adapter, combination] = GetParam();
  // The combination's own adapter settings (the last word on a key) apply to both runs.
  std::vector<std::string> adapter_settings;
  for (const std::string& o : combination.overrides) {
    if (o.rfind("strategies.adapter.", 0) == 0) adapter_settings.push_back(o);
  }
  const config::RunConfig alone_cfg = TinyRun(kSteps, Joined(adapter.overrides, adapter_settings));
  const config::RunConfig with_cfg =
      TinyRun(kSteps, Joined(adapter.overrides, combination.overrides));
  const Probed alone = TrainProbed(alone_cfg);
  const Probed with = TrainProbed(with_cfg);
  ASSERT_EQ(alone.result.status, train::RunStatus::kOk) << alone.result.error;
  ASSERT_EQ(with.result.status, train::RunStatus::kOk) << with.result.error;
  ASSERT_EQ(with.result.steps.size(), static_cast<size_t>(kSteps));
  const std::string what = adapter.name + " + " + combination.name;

  // The frozen base: the same tensors, untouched by training, counted as the adapter counts them.
  EXPECT_GT(with.probe->frozen, 0) << what;
  EXPECT_EQ(with.probe->frozen, alone.probe->frozen) << what;
  EXPECT_EQ(with.probe->changed, 0) << what << ": frozen tensors changed by training";
  EXPECT_EQ(with.probe->with_grad, 0) << what << ": frozen tensors with a gradient";
  EXPECT_EQ(with.result.memory.frozen_params_bytes, alone.result.memory.frozen_params_bytes) << what;
  EXPECT_EQ(with.result.summary.trainable_params, alone.result.summary.trainable_params) << what;

  const std::vector<double> expected = Losses(alone.result), actual = Losses(with.result);
  switch (combination.expect) {
    case Expect::kBitwise:
      EXPECT_EQ(actual, expected) << what;
      EXPECT_EQ(with.result.memory.optimizer_bytes, alone.result.memory.optimizer_bytes) << what;
      break;
    case Expect::kTrajectory:
      ExpectSameTrajectory(actual, expected, StepPathTerms(alone_cfg), what);
      break;
    case Expect::kTrains:
      for (double loss : actual) EXPECT_TRUE(std::isfinite(loss)) << what;
      break;
  }
}

std::string Name(const testing::TestParamInfo<AdapterCombinationTest::ParamType>& info) {
  return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(EveryPlugin, AdapterCombinationTest,
                         testing::Combine(testing::ValuesIn(Adapters()),
                                          testing::ValuesIn(Combinations())),
                         Name);

// precision/bf16 converts the factors (fp32 masters in the optimizer) and leaves the frozen
// base in base_dtype; bf16-autocast keeps fp32 parameters and converts nothing.
TEST(AdapterCombinationTest, Bf16PrecisionConvertsTheFactorsAndLeavesTheBase) {
  for (const Adapter& adapter : Adapters()) {
    const train::RunResult alone = testing_support::Train(TinyRun(2, adapter.overrides));
    const train::RunResult bf16 = testing_support::Train(
        TinyRun(2, Joined(adapter.overrides, {"strategies.precision.plugin=\"bf16\""})));
    const train::RunResult autocast = testing_support::Train(
        TinyRun(2, Joined(adapter.overrides, {"strategies.precision.plugin=\"bf16-autocast\""})));
    ASSERT_EQ(bf16.status, train::RunStatus::kOk) << bf16.error;
    ASSERT_EQ(autocast.status, train::RunStatus::kOk) << autocast.error;
    EXPECT_EQ(bf16.memory.trainable_params_bytes * 2, alone.memory.trainable_params_bytes)
        << adapter.name;
    EXPECT_EQ(autocast.memory.trainable_params_bytes, alone.memory.trainable_params_bytes)
        << adapter.name;
    EXPECT_EQ(bf16.memory.frozen_params_bytes, alone.memory.frozen_params_bytes) << adapter.name;
    // AdamW's two moments plus the fp32 master copy of each bf16 factor.
    EXPECT_EQ(bf16.memory.optimizer_bytes, alone.memory.optimizer_bytes * 3 / 2) << adapter.name;
  }
}

}  // namespace
}  // namespace memsweep::plugins::adapter
