// optimizer/adamw, the optimizer slot's default: memsweep's AdamW. A file without
// [strategies.optimizer] gets it; its state is exp_avg and exp_avg_sq, 8 bytes per fp32 element,
// created at the first update; the update allocates nothing beyond them; and it updates as the
// SDK's AdamWUpdate does.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "core/config/strategy_resolver.h"
#include "core/memory/tracking_allocator.h"
#include "memsweep/adamw_update.h"
#include "memsweep/strategy.h"
#include "support/run_configs.h"

namespace memsweep::adamw_optimizer_test {
namespace {

std::shared_ptr<Strategy> OptimizerSlot(const config::RunConfig& cfg) {
  for (const auto& active : config::InstantiateStrategies(cfg)) {
    if (active.slot == "optimizer") return active.impl;
  }
  return nullptr;
}

TEST(AdamWOptimizerTest, IsTheSlotsDefault) {
  const config::RunConfig cfg = testing_support::TinyRun(1);
  bool found = false;
  for (const auto& choice : cfg.strategies) {
    if (choice.slot != "optimizer") continue;
    found = true;
    EXPECT_EQ(choice.plugin, "adamw");
  }
  EXPECT_TRUE(found);
}

TEST(AdamWOptimizerTest, KeepsTwoFp32MomentsAndAllocatesNothingElse) {
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Install();
  const std::shared_ptr<Strategy> strategy = OptimizerSlot(testing_support::TinyRun(1));
  auto* slot = dynamic_cast<OptimizerStrategy*>(strategy.get());
  ASSERT_NE(slot, nullptr);
  // Shapes whose bytes are multiples of 64 (the allocator's alignment): 1000 x 64 and 4096.
  std::vector<at::Tensor> tensors = {at::randn({1000, 64}), at::randn({4096}), at::randn({3})};
  for (at::Tensor& t : tensors) t.mutable_grad() = at::randn_like(t);
  tensors[2].mutable_grad() = at::Tensor();  // no gradient: no state, not updated
  const at::Tensor untouched = tensors[2].clone();
  std::vector<at::Tensor> expected;
  for (const at::Tensor& t : tensors) expected.push_back(t.clone());
  const std::unique_ptr<Optimizer> optimizer = slot->MakeOptimizer(tensors);
  EXPECT_TRUE(optimizer->StateTensors().empty()) << "state comes at the first update";

  OptimizerStepSpec spec;
  spec.lr = 1e-3;
  spec.weight_decay = 0.1;
  spec.step = 1;
  const int64_t before = tracker.AllocatedBytes();
  tracker.ResetWindowPeak();
  optimizer->Step(spec);
  const int64_t state = 2 * 4 * (1000 * 64 + 4096);
  EXPECT_EQ(tracker.AllocatedBytes() - before, state);
  EXPECT_EQ(tracker.WindowPeakBytes() - before, state) << "a temporary beside the state";
  ASSERT_EQ(optimizer->StateTensors().size(), 4u);
  for (const at::Tensor& s : optimizer->StateTensors()) EXPECT_EQ(s.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(tensors[2], untouched));

  // The same values as the SDK's AdamW update of the same tensors.
  torch::NoGradGuard no_grad;
  const AdamWHyperparameters h{spec.lr, spec.beta1, spec.beta2, spec.eps, spec.weight_decay};
  for (size_t i = 0; i < 2; ++i) {
    const at::Tensor m = at::zeros_like(expected[i]), v = at::zeros_like(expected[i]);
    AdamWUpdate(expected[i], tensors[i].grad(), m, v, h, 1);
    EXPECT_TRUE(at::equal(tensors[i], expected[i])) << "tensor " << i;
  }
}

// A sharding strategy that owns the step keeps memsweep's AdamW state of its own partition:
// another optimizer beside it is refused at validation, naming both ways out; the default is not.
TEST(AdamWOptimizerTest, AnotherOptimizerBesideShardingThatOwnsTheStepIsRefused) {
  EXPECT_NO_THROW(testing_support::TinyRun(1, {"strategies.sharding.plugin=\"zero2\""}));
  try {
    testing_support::TinyRun(1, {"strategies.sharding.plugin=\"zero2\"",
                                 "strategies.optimizer.plugin=\"torch_adamw\""});
    FAIL() << "torch_adamw beside zero2 was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[strategies.optimizer] plugin = \"torch_adamw\" cannot run beside "
                  "[strategies.sharding] plugin = \"zero2\", which owns the optimizer step and "
                  "keeps AdamW state of its own partition (memsweep's AdamW, optimizer \"adamw\"): "
                  "use that optimizer with it, or sharding \"none\" or \"ddp\" with this one"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(testing_support::TinyRun(1, {"strategies.sharding.plugin=\"ddp\"",
                                               "strategies.optimizer.plugin=\"torch_adamw\""}));
}

}  // namespace
}  // namespace memsweep::adamw_optimizer_test
