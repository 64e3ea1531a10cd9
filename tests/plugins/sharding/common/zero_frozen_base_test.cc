// sharding/zero1 and sharding/zero2 beside an adapter that freezes the base (adapter/lora,
// adapter/qlora), on one process: the frozen base stays as the adapter stored it, bit for bit;
// only the trainable parameters are flattened, reduced and updated, so the run follows the
// unsharded run of the same adapter (the same arithmetic in another order: the fp32 trajectory
// tolerance), the optimizer holds AdamW's two fp32 moments per trainable element only, and the
// frozen bytes are the unsharded run's. Two ranks: tests/plugins/sharding/data_parallel_test.cc.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/strategy_resolver.h"
#include "core/train/trainer.h"
#include "memsweep/strategy.h"
#include "support/frozen_base_probe.h"
#include "support/run_configs.h"

namespace memsweep::sharding::frozen_base_test {
namespace {

using testing_support::FrozenBaseProbe;
using testing_support::Losses;
using testing_support::TinyRun;

struct Trained {
  train::RunResult result;
  size_t frozen = 0;
};

Trained TrainChecked(const config::RunConfig& cfg, const std::string& what) {
  auto probe = std::make_shared<FrozenBaseProbe>();
  plugin::StrategySet strategies = config::InstantiateStrategies(cfg);
  strategies.push_back({"callbacks", "frozen-base-probe", "0", probe});
  Trained t{train::Trainer(cfg, std::move(strategies)).Run(), 0};
  EXPECT_EQ(t.result.status, train::RunStatus::kOk) << what << ": " << t.result.error;
  EXPECT_EQ(probe->checked, 1) << what;
  EXPECT_EQ(probe->changed, 0) << what << ": frozen parameters changed by training";
  EXPECT_EQ(probe->with_grad, 0) << what << ": frozen parameters with a gradient";
  t.frozen = static_cast<size_t>(probe->frozen);
  return t;
}

std::vector<std::string> With(std::vector<std::string> overrides, const std::string& adapter,
                              const std::string& sharding) {
  overrides.push_back("strategies.adapter.plugin=\"" + adapter + "\"");
  overrides.push_back("strategies.adapter.rank=4");
  overrides.push_back("strategies.sharding.plugin=\"" + sharding + "\"");
  return overrides;
}

// Each adapter under none, zero1 and zero2; `bytes_per_trainable`: what the optimizer holds per
// trainable element (AdamW's moments, and fp32 master copies under precision/bf16).
void ExpectZeroFollowsTheUnshardedRun(const std::vector<std::string>& overrides,
                                      int64_t bytes_per_trainable) {
  for (const std::string adapter : {"lora", "qlora"}) {
    const config::RunConfig none_cfg = TinyRun(4, With(overrides, adapter, "none"));
    const Trained none = TrainChecked(none_cfg, adapter + " none");
    ASSERT_EQ(none.result.status, train::RunStatus::kOk);
    const int64_t trainable = none.result.summary.trainable_params;
    ASSERT_GT(trainable, 0);
    ASSERT_GT(none.frozen, 0u);
    EXPECT_EQ(none.result.memory.optimizer_bytes, bytes_per_trainable * trainable) << adapter;
    for (const std::string sharding : {"zero1", "zero2"}) {
      const std::string what = adapter + " " + sharding;
      const config::RunConfig cfg = TinyRun(4, With(overrides, adapter, sharding));
      const Trained zero = TrainChecked(cfg, what);
      if (zero.result.status != train::RunStatus::kOk) continue;
      testing_support::ExpectSameTrajectory(Losses(zero.result), Losses(none.result),
                                            testing_support::StepPathTerms(cfg), what);
      const train::MemoryBreakdown& m = zero.result.memory;
      EXPECT_EQ(zero.frozen, none.frozen) << what;
      EXPECT_EQ(zero.result.summary.trainable_params, trainable) << what;
      // Only the trainable parameters carry state; one rank: no padding.
      EXPECT_EQ(m.optimizer_bytes, bytes_per_trainable * trainable) << what;
      EXPECT_EQ(m.frozen_params_bytes, none.result.memory.frozen_params_bytes) << what;
      EXPECT_EQ(m.trainable_params_bytes, none.result.memory.trainable_params_bytes) << what;
      EXPECT_EQ(m.params_bytes, none.result.memory.params_bytes) << what;
    }
  }
}

TEST(ZeroFrozenBase, Fp32FollowsTheUnshardedRunAndLeavesTheBaseAlone) {
  ExpectZeroFollowsTheUnshardedRun({}, 2 * 4);
}

// precision/bf16: the factors in bf16 with fp32 masters handed over group by group (none for
// the frozen base): master, exp_avg and exp_avg_sq, 12 bytes per trainable element.
TEST(ZeroFrozenBase, Bf16MasterCopiesOnlyForTheTrainableParameters) {
  ExpectZeroFollowsTheUnshardedRun({"strategies.precision.plugin=\"bf16\""}, 3 * 4);
}

// modules_to_save = ["embed_tokens"]: the first group built (the embedding) trains, so ZeRO
// flattens it before the first frozen parameter shows up, then lays the trainable parameters out
// again at the end of the model stage (its bf16 master copy gathered back first).
TEST(ZeroFrozenBase, ATrainableFirstGroupIsLaidOutAgain) {
  const std::vector<std::string> overrides = {"strategies.precision.plugin=\"bf16\"",
                                              "strategies.adapter.modules_to_save=[\"embed_tokens\"]"};
  const Trained none = TrainChecked(TinyRun(4, With(overrides, "lora", "none")), "none");
  ASSERT_EQ(none.result.status, train::RunStatus::kOk);
  const int64_t trainable = none.result.summary.trainable_params;
  for (const std::string sharding : {"zero1", "zero2"}) {
    const config::RunConfig cfg = TinyRun(4, With(overrides, "lora", sharding));
    const Trained zero = TrainChecked(cfg, sharding);
    if (zero.result.status != train::RunStatus::kOk) continue;
    testing_support::ExpectSameTrajectory(Losses(zero.result), Losses(none.result),
                                          testing_support::StepPathTerms(cfg), sharding);
    EXPECT_EQ(zero.result.summary.trainable_params, trainable) << sharding;
    EXPECT_EQ(zero.result.memory.optimizer_bytes, 12 * trainable) << sharding;
    EXPECT_EQ(zero.result.memory.frozen_params_bytes, none.result.memory.frozen_params_bytes)
        << sharding;
  }
}

}  // namespace
}  // namespace memsweep::sharding::frozen_base_test
