// Declared hooks (Strategy::StageHooks): the host calls a strategy's hooks only where it
// declares one — everywhere when it declares none — so `memsweep plan --stages` lists what runs.
// Every bundled plugin declares its hooks, and its declaration leaves nothing out: a run with
// every hook called gives the same figures as a run with only the declared ones.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "core/config/strategy_resolver.h"
#include "core/plugin/plugin_library.h"
#include "core/plugin/plugin_registry.h"
#include "core/train/strategy_hooks.h"
#include "memsweep/strategy.h"
#include "support/run_configs.h"

namespace memsweep::train {
namespace {

// Writes "<stage>+" / "<stage>-" / "built" wherever it is called.
struct Declaring : Strategy {
  explicit Declaring(std::optional<std::vector<StageHook>> hooks, std::vector<std::string>* log)
      : hooks(std::move(hooks)), log(log) {}
  void OnStageBegin(Stage stage, RunContext&) override {
    log->push_back(std::string(StageName(stage)) + "+");
  }
  void OnStageEnd(Stage stage, RunContext&) override {
    log->push_back(std::string(StageName(stage)) + "-");
  }
  void OnParametersBuilt(const std::vector<size_t>&, RunContext&) override {
    log->push_back("built");
  }
  std::optional<std::vector<StageHook>> StageHooks() const override { return hooks; }
  std::optional<std::vector<StageHook>> hooks;
  std::vector<std::string>* log;
};

void CallEverything(const StrategySet& set) {
  const StrategyHooks hooks(set);
  RunContext context;
  for (Stage stage : {Stage::kModel, Stage::kForward, Stage::kBackward}) {
    hooks.Begin(stage, context);
    if (stage == Stage::kModel) hooks.ParametersBuilt({}, context);
    hooks.End(stage, context);
  }
}

TEST(StageHooksTest, AStrategyIsCalledOnlyWhereItDeclaresAHook) {
  std::vector<std::string> log;
  StrategySet set{{"callbacks", "declaring", "1",
                   std::make_shared<Declaring>(
                       std::vector<StageHook>{{Stage::kForward, HookPoint::kBegin, "a"},
                                              {Stage::kModel, HookPoint::kParametersBuilt, "b"},
                                              {Stage::kBackward, HookPoint::kEnd, "c"}},
                       &log)}};
  CallEverything(set);
  EXPECT_EQ(log, (std::vector<std::string>{"built", "forward+", "backward-"}));
}

TEST(StageHooksTest, AStrategyThatDeclaresNothingIsCalledEverywhere) {
  std::vector<std::string> log;
  StrategySet set{{"callbacks", "silent", "1", std::make_shared<Declaring>(std::nullopt, &log)}};
  CallEverything(set);
  EXPECT_EQ(log, (std::vector<std::string>{"model+", "built", "model-", "forward+", "forward-",
                                           "backward+", "backward-"}));
  // An empty declaration is a declaration: no hook at all.
  log.clear();
  StrategySet none{{"callbacks", "none", "1",
                    std::make_shared<Declaring>(std::vector<StageHook>{}, &log)}};
  CallEverything(none);
  EXPECT_TRUE(log.empty());
}

TEST(StageHooksTest, ADeclarationThatCannotBeRightIsRefusedNamingThePlugin) {
  std::vector<std::string> log;
  StrategySet outside{{"callbacks", "odd", "1",
                       std::make_shared<Declaring>(
                           std::vector<StageHook>{{Stage::kForward, HookPoint::kParametersBuilt, ""}},
                           &log)}};
  try {
    StrategyHooks hooks(outside);
    FAIL() << "accepted parameters built at forward";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("plugin 'odd' declares a hook at forward (parameters "
                                         "built): parameters are built in the model stage only"),
              std::string::npos)
        << e.what();
  }
  StrategySet twice{{"callbacks", "twice", "1",
                     std::make_shared<Declaring>(
                         std::vector<StageHook>{{Stage::kForward, HookPoint::kBegin, "a"},
                                                {Stage::kForward, HookPoint::kBegin, "b"}},
                         &log)}};
  EXPECT_THROW(StrategyHooks hooks(twice), PluginError);
}

// Restores the process-wide switch whatever a test does.
struct HonourAgain {
  ~HonourAgain() { StrategyHooks::HonourDeclarations(true); }
};

// The figures of a run that two runs of the same cell must share.
void ExpectSameRun(const RunResult& declared, const RunResult& every, const std::string& cell) {
  ASSERT_EQ(declared.status, every.status) << cell << ": " << declared.error << " | " << every.error;
  ASSERT_EQ(declared.steps.size(), every.steps.size()) << cell;
  for (size_t i = 0; i < declared.steps.size(); ++i) {
    EXPECT_EQ(declared.steps[i].loss, every.steps[i].loss) << cell << " step " << i;
    EXPECT_EQ(declared.steps[i].grad_norm, every.steps[i].grad_norm) << cell << " step " << i;
    EXPECT_EQ(declared.steps[i].peak_allocated_bytes, every.steps[i].peak_allocated_bytes)
        << cell << " step " << i;
    EXPECT_EQ(declared.steps[i].skipped, every.steps[i].skipped) << cell << " step " << i;
    EXPECT_EQ(declared.steps[i].metrics, every.steps[i].metrics) << cell << " step " << i;
  }
  // Stage by stage: what a hook left allocated (a tensor it should have freed) shows at the
  // stage's end even where the step's peak is elsewhere.
  ASSERT_EQ(declared.timeline.size(), every.timeline.size()) << cell;
  for (size_t i = 0; i < declared.timeline.size(); ++i) {
    const TimelinePoint& d = declared.timeline[i];
    const TimelinePoint& e = every.timeline[i];
    const std::string where = cell + " step " + std::to_string(d.step) + " " + d.stage;
    EXPECT_EQ(std::string(d.stage), std::string(e.stage)) << where;
    EXPECT_EQ(d.allocated_bytes, e.allocated_bytes) << where;
    EXPECT_EQ(d.reserved_bytes, e.reserved_bytes) << where;
    EXPECT_EQ(d.peak_bytes, e.peak_bytes) << where;
  }
  // Figures in seconds are the clock's: both runs record them, at values of their own.
  auto declared_metrics = declared.plugin_metrics, every_metrics = every.plugin_metrics;
  for (auto* metrics : {&declared_metrics, &every_metrics}) {
    for (auto& [name, value] : *metrics) {
      if (name.size() > 8 && name.compare(name.size() - 8, 8, ".seconds") == 0) value = 0;
    }
  }
  EXPECT_EQ(declared_metrics, every_metrics) << cell;
}

// Runs `overrides`' tiny cell twice — with the declared hooks only, and with every hook called —
// and expects the same figures. A process's first run of a plugin counts what it makes once per
// process (adapter/qlora's NF4 tables, about 3 KB: qlora_training_test.cc): the compared runs
// both come after one. Two steps: the second runs every stage with the optimizer's state in place.
void ExpectDeclaredHooksLeaveNothingOut(const std::string& cell,
                                        const std::vector<std::string>& overrides) {
  const config::RunConfig cfg = testing_support::TinyRun(2, overrides);
  StrategyHooks::HonourDeclarations(true);
  testing_support::Train(testing_support::TinyRun(1, overrides));
  const RunResult declared = testing_support::Train(cfg);
  StrategyHooks::HonourDeclarations(false);
  const RunResult every = testing_support::Train(cfg);
  StrategyHooks::HonourDeclarations(true);
  EXPECT_EQ(declared.status, RunStatus::kOk) << cell << ": " << declared.error;
  ExpectSameRun(declared, every, cell);
}

// Cells where a plugin's hooks act only under a condition its own tiny cell does not meet (a
// parameter, another slot's plugin, accumulation), so that those hooks are compared too.
struct ConditionCell {
  const char* cell;
  std::vector<std::string> overrides;
};
const std::vector<ConditionCell>& ConditionCells() {
  static const std::vector<ConditionCell> cells = {
      {"callbacks/empty_cache every=1 on allocator/caching",
       {"strategies.callbacks=[{plugin=\"empty_cache\", every=1}]",
        "strategies.allocator.plugin=caching"}},
      {"loss/full keep_logits",
       {"strategies.loss.plugin=full", "strategies.loss.keep_logits=true"}},
      {"precision/bf16 + sharding/ddp",
       {"strategies.precision.plugin=bf16", "strategies.sharding.plugin=ddp"}},
      {"precision/bf16 + sharding/zero1, accumulation 2",
       {"strategies.precision.plugin=bf16", "strategies.sharding.plugin=zero1",
        "strategies.batching.accumulation_steps=2"}},
      {"precision/bf16 + sharding/zero2, accumulation 2",
       {"strategies.precision.plugin=bf16", "strategies.sharding.plugin=zero2",
        "strategies.batching.accumulation_steps=2"}},
      {"precision/bf16 + sharding/zero3, accumulation 2",
       {"strategies.precision.plugin=bf16", "strategies.sharding.plugin=zero3",
        "strategies.batching.accumulation_steps=2"}},
      {"adapter/lora + precision/bf16 + sharding/zero2 (a frozen base)",
       {"strategies.adapter.plugin=lora", "strategies.precision.plugin=bf16",
        "strategies.sharding.plugin=zero2"}},
      {"checkpointing/every_k + sharding/zero3",
       {"strategies.checkpointing.plugin=every_k", "strategies.sharding.plugin=zero3"}},
  };
  return cells;
}

// Every bundled plugin runs in a tiny cell of its own twice: with its declared hooks only, and
// with every hook called. A hook that acts where the plugin does not declare it changes a
// figure of the second run (or a figure it records).
TEST(StageHooksTest, EveryBundledPluginDeclaresItsHooksAndLeavesNothingOut) {
  HonourAgain restore;
  plugin::PluginRegistry& registry = plugin::PluginRegistry::Default();
  size_t compared = 0;
  for (const plugin::PluginLibrary* library : registry.All()) {
    if (library->path().find(plugin::BuiltinPluginDirectory()) != 0) continue;
    const std::string cell = library->slot() + "/" + library->name();
    const std::string set =
        library->slot() == "callbacks"
            ? "strategies.callbacks=[{plugin=\"" + library->name() + "\"}]"
            : "strategies." + library->slot() + ".plugin=" + library->name();
    plugin::StrategySet strategies;
    try {
      strategies = config::InstantiateStrategies(testing_support::TinyRun(3, {set}));
    } catch (const config::ConfigError& e) {
      std::printf("%s: not run in a tiny CPU cell (%s)\n", cell.c_str(), e.what());
      continue;
    }
    for (const plugin::ActiveStrategy& active : strategies) {
      if (active.slot != library->slot()) continue;
      EXPECT_TRUE(active.impl->StageHooks().has_value())
          << cell << " declares no hooks (Strategy::StageHooks)";
    }
    ExpectDeclaredHooksLeaveNothingOut(cell, {set});
    ++compared;
  }
  // Most bundled plugins run on the CPU in a tiny cell (fp16 needs CUDA).
  EXPECT_GE(compared, 25u);
  for (const ConditionCell& c : ConditionCells()) {
    ExpectDeclaredHooksLeaveNothingOut(c.cell, c.overrides);
  }
}

}  // namespace
}  // namespace memsweep::train
