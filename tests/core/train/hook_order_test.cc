// The order in which the training loop talks to the slots, pinned: SlotNames() is the one
// source; strategy.h's table and docs/plugin-guide.md list the slots in that order; stage hooks
// run in it at a stage's beginning and in reverse at its end; and the optimizer stage asks the
// sharding slot first — whether it owns the step decides if the precision slot hands its
// parameters over (HandOverOptimizerParameters → AdoptOptimizerParameters) or names them for
// the host's AdamW (OptimizerParameters).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/strategy_resolver.h"
#include "core/train/strategy_hooks.h"
#include "core/train/trainer.h"
#include "memsweep/strategy.h"
#include "support/run_configs.h"

namespace memsweep::train {
namespace {

const std::vector<std::string> kHookOrder = {
    "allocator", "sharding", "precision",     "optimizer", "adapter",  "packing",
    "batching",  "attention", "kernels", "checkpointing", "loss", "callbacks"};

TEST(HookOrderTest, SlotNamesAreTheHookOrderAndMatchTheSlotEnum) {
  EXPECT_EQ(SlotNames(), kHookOrder);
  // One list (MEMSWEEP_SLOTS) gives the enum, the names and the count.
  EXPECT_EQ(kSlotCount, kHookOrder.size());
  EXPECT_EQ(static_cast<size_t>(Slot::kCallbacks) + 1, kSlotCount);
  for (size_t i = 0; i < kHookOrder.size(); ++i) {
    Slot slot{};
    ASSERT_TRUE(ParseSlot(kHookOrder[i], slot));
    EXPECT_EQ(static_cast<size_t>(slot), i);
    EXPECT_EQ(SlotName(slot), kHookOrder[i]);
  }
}

// The slot names in the order they first appear on lines that start with `prefix` + a slot name.
std::vector<std::string> SlotsListedIn(const std::string& path, const std::string& prefix) {
  std::ifstream in(testing_support::SourcePath(path));
  EXPECT_TRUE(in) << path;
  std::vector<std::string> found;
  std::string line;
  while (std::getline(in, line)) {
    for (const std::string& slot : kHookOrder) {
      const std::string head = prefix + slot;
      if (line.rfind(head, 0) == 0 && line.size() > head.size() &&
          (line[head.size()] == ' ' || line[head.size()] == '`')) {
        found.push_back(slot);
      }
    }
  }
  return found;
}

TEST(HookOrderTest, TheSdkHeaderAndThePluginGuideListTheSlotsInHookOrder) {
  EXPECT_EQ(SlotsListedIn("core/include/memsweep/strategy.h", "//   "), kHookOrder);
  EXPECT_EQ(SlotsListedIn("docs/plugin-guide.md", "| `"), kHookOrder);
}

// A strategy that writes "<slot>+" at a stage's beginning and "<slot>-" at its end.
struct Recorder : Strategy {
  Recorder(std::string slot, std::vector<std::string>* log) : slot(std::move(slot)), log(log) {}
  void OnStageBegin(Stage, RunContext&) override { log->push_back(slot + "+"); }
  void OnStageEnd(Stage, RunContext&) override { log->push_back(slot + "-"); }
  std::string slot;
  std::vector<std::string>* log;
};

TEST(HookOrderTest, BeginHooksRunInSlotOrderAndEndHooksInReverse) {
  std::vector<std::string> log;
  StrategySet set;
  for (const std::string& slot : kHookOrder) {
    set.push_back({slot, "recorder", "1", std::make_shared<Recorder>(slot, &log)});
  }
  const StrategyHooks hooks(set);
  RunContext context;
  hooks.Begin(Stage::kStepBegin, context);
  hooks.End(Stage::kStepBegin, context);
  std::vector<std::string> expected;
  for (const std::string& slot : kHookOrder) expected.push_back(slot + "+");
  for (auto it = kHookOrder.rbegin(); it != kHookOrder.rend(); ++it) expected.push_back(*it + "-");
  EXPECT_EQ(log, expected);
}

// The run's own strategies resolve in hook order too.
TEST(HookOrderTest, ARunsStrategiesAreInstantiatedInHookOrder) {
  const StrategySet set = config::InstantiateStrategies(testing_support::TinyRun(1));
  std::vector<std::string> slots;
  for (const auto& active : set) slots.push_back(active.slot);
  std::vector<std::string> expected(kHookOrder.begin(), kHookOrder.end() - 1);  // no callbacks
  EXPECT_EQ(slots, expected);
}

// fp32 precision that logs which of its optimizer calls the loop makes.
struct LoggingPrecision : PrecisionStrategy {
  explicit LoggingPrecision(std::vector<std::string>* log) : log(log) {}
  c10::ScalarType ComputeDtype() const override { return at::kFloat; }
  std::vector<at::Tensor> OptimizerParameters(const std::vector<at::Tensor>& params) override {
    log->push_back("precision.OptimizerParameters");
    return params;
  }
  std::vector<at::Tensor> HandOverOptimizerParameters(
      const std::vector<at::Tensor>& params) override {
    log->push_back("precision.HandOverOptimizerParameters");
    return params;
  }
  std::vector<std::string>* log;
};

// A sharding strategy that does or does not own the step (and then updates nothing), and takes
// the optimizer's tensors all at once or group by group.
struct LoggingSharding : ShardingStrategy {
  LoggingSharding(bool owns, bool by_group, std::vector<std::string>* log)
      : owns(owns), by_group(by_group), log(log) {}
  bool OwnsOptimizerStep() const override {
    log->push_back("sharding.OwnsOptimizerStep");
    return owns;
  }
  void AdoptOptimizerParameters(RunContext& context, std::vector<at::Tensor> updated) override {
    log->push_back("sharding.AdoptOptimizerParameters");
    ShardingStrategy::AdoptOptimizerParameters(context, std::move(updated));
  }
  bool AdoptsOptimizerParametersByGroup() const override {
    log->push_back("sharding.AdoptsOptimizerParametersByGroup");
    return by_group;
  }
  void AdoptGroupOptimizerParameters(RunContext&, const std::vector<size_t>& built,
                                     std::vector<at::Tensor> updated) override {
    log->push_back("sharding.AdoptGroupOptimizerParameters(" + std::to_string(built.size()) +
                   (updated.size() == built.size() ? ")" : ", sizes differ)"));
  }
  double OptimizerStep(RunContext& context, const OptimizerStepSpec&) override {
    for (const at::Tensor& p : context.model->Parameters()) p.mutable_grad() = at::Tensor();
    return 0.0;
  }
  bool owns, by_group;
  std::vector<std::string>* log;
};

std::vector<std::string> OptimizerCalls(bool sharding_owns_the_step, bool by_group = false) {
  const config::RunConfig cfg = testing_support::TinyRun(1);
  StrategySet set = config::InstantiateStrategies(cfg);
  std::vector<std::string> log;
  for (auto& active : set) {
    if (active.slot == "sharding") {
      active.impl = std::make_shared<LoggingSharding>(sharding_owns_the_step, by_group, &log);
    }
    if (active.slot == "precision") active.impl = std::make_shared<LoggingPrecision>(&log);
  }
  const RunResult result = Trainer(cfg, std::move(set)).Run();
  EXPECT_EQ(result.status, RunStatus::kOk) << result.error;
  return log;
}

// The model stage asks whether the sharding slot owns the step and takes the optimizer's
// tensors group by group; the optimizer stage asks again. All at once: the hand-over happens in the
// optimizer stage. By group (tiny: embedding, 2 blocks, final norm + LM head): in the model stage,
// after each group is built, and not again.
TEST(HookOrderTest, TheShardingSlotDecidesHowThePrecisionSlotHandsOverItsParameters) {
  EXPECT_EQ(OptimizerCalls(true),
            (std::vector<std::string>{
                "sharding.OwnsOptimizerStep", "sharding.AdoptsOptimizerParametersByGroup",
                "sharding.OwnsOptimizerStep", "precision.HandOverOptimizerParameters",
                "sharding.AdoptOptimizerParameters"}));
  EXPECT_EQ(OptimizerCalls(false),
            (std::vector<std::string>{"sharding.OwnsOptimizerStep", "sharding.OwnsOptimizerStep",
                                      "precision.OptimizerParameters"}));
  const size_t block = 9;  // a tiny block: 7 weight matrices and 2 norms, no biases
  EXPECT_EQ(
      OptimizerCalls(true, /*by_group=*/true),
      (std::vector<std::string>{
          "sharding.OwnsOptimizerStep", "sharding.AdoptsOptimizerParametersByGroup",
          "precision.HandOverOptimizerParameters", "sharding.AdoptGroupOptimizerParameters(1)",
          "precision.HandOverOptimizerParameters",
          "sharding.AdoptGroupOptimizerParameters(" + std::to_string(block) + ")",
          "precision.HandOverOptimizerParameters",
          "sharding.AdoptGroupOptimizerParameters(" + std::to_string(block) + ")",
          "precision.HandOverOptimizerParameters", "sharding.AdoptGroupOptimizerParameters(2)",
          "sharding.OwnsOptimizerStep"}));
}

}  // namespace
}  // namespace memsweep::train
